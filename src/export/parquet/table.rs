//! One Parquet file written a row group at a time: a fixed list of flat columns, rows
//! pushed one by one into per-column buffers, and every `rows_per_group` rows one row group
//! written and the buffers emptied, so a table of any length is written in the memory of
//! one row group.
//!
//! Columns are of five kinds (INT64, DOUBLE, UTF-8 strings, booleans and microsecond UTC
//! timestamps), the types pandas, Polars and DuckDB all read as their own without options.

use parquet::basic::{Compression, LogicalType, Repetition, TimeUnit, Type as Physical};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::errors::Result;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::{SerializedColumnWriter, SerializedFileWriter};
use parquet::schema::types::Type;
use std::io::Write;
use std::sync::Arc;

/// What a column holds, and how it is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A whole number: INT64.
    Int,
    /// A real number: DOUBLE.
    Float,
    /// UTF-8 text: BYTE_ARRAY annotated STRING.
    Text,
    /// BOOLEAN.
    Flag,
    /// An instant: INT64 microseconds since the Unix epoch, annotated TIMESTAMP(MICROS,
    /// UTC), so readers show a UTC date-time.
    Time,
}

impl Kind {
    /// The type as docs/parquet.md names it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Int => "int64",
            Kind::Float => "double",
            Kind::Text => "string",
            Kind::Flag => "boolean",
            Kind::Time => "timestamp[µs, UTC]",
        }
    }

    fn physical(self) -> (Physical, Option<LogicalType>) {
        match self {
            Kind::Int => (Physical::INT64, None),
            Kind::Float => (Physical::DOUBLE, None),
            Kind::Text => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
            Kind::Flag => (Physical::BOOLEAN, None),
            Kind::Time => (
                Physical::INT64,
                Some(LogicalType::timestamp(true, TimeUnit::MICROS)),
            ),
        }
    }
}

/// One column: its name (with its unit), its kind, whether it may be null, and what it
/// holds (docs/parquet.md shows the same, from these).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    pub kind: Kind,
    pub nullable: bool,
    /// `ms`, `µs since the epoch`, `tokens`, … or empty for a name, a count of things or a flag.
    pub unit: &'static str,
    pub meaning: &'static str,
}

/// A column that always has a value.
pub const fn required(
    name: &'static str,
    kind: Kind,
    unit: &'static str,
    meaning: &'static str,
) -> Column {
    Column {
        name,
        kind,
        nullable: false,
        unit,
        meaning,
    }
}

/// A column that may be null.
pub const fn nullable(
    name: &'static str,
    kind: Kind,
    unit: &'static str,
    meaning: &'static str,
) -> Column {
    Column {
        name,
        kind,
        nullable: true,
        unit,
        meaning,
    }
}

/// The Parquet schema of `columns`: one flat message of primitive fields.
pub fn schema(columns: &[Column]) -> Result<Type> {
    let fields = columns
        .iter()
        .map(|c| {
            let (physical, logical) = c.kind.physical();
            let repetition = if c.nullable {
                Repetition::OPTIONAL
            } else {
                Repetition::REQUIRED
            };
            Type::primitive_type_builder(c.name, physical)
                .with_repetition(repetition)
                .with_logical_type(logical)
                .build()
                .map(Arc::new)
        })
        .collect::<Result<Vec<_>>>()?;
    Type::group_type_builder("schema")
        .with_fields(fields)
        .build()
}

/// The values of one column in the row group being filled.
#[derive(Debug)]
enum Values {
    Int(Vec<i64>),
    Float(Vec<f64>),
    Text(Vec<ByteArray>),
    Flag(Vec<bool>),
}

/// One column's buffer: its values (nulls left out) and, when nullable, one definition
/// level per row (1: a value, 0: null).
#[derive(Debug)]
struct Buffer {
    values: Values,
    defs: Vec<i16>,
    nullable: bool,
}

impl Buffer {
    fn new(c: &Column) -> Self {
        let values = match c.kind {
            Kind::Int | Kind::Time => Values::Int(Vec::new()),
            Kind::Float => Values::Float(Vec::new()),
            Kind::Text => Values::Text(Vec::new()),
            Kind::Flag => Values::Flag(Vec::new()),
        };
        Buffer {
            values,
            defs: Vec::new(),
            nullable: c.nullable,
        }
    }

    /// Writes the buffered values as the column's chunk in the row group, then empties it.
    fn write_into(&mut self, column: &mut SerializedColumnWriter<'_>) -> Result<()> {
        let defs = self.nullable.then_some(self.defs.as_slice());
        match &mut self.values {
            Values::Int(v) => {
                column.typed::<Int64Type>().write_batch(v, defs, None)?;
                v.clear();
            }
            Values::Float(v) => {
                column.typed::<DoubleType>().write_batch(v, defs, None)?;
                v.clear();
            }
            Values::Text(v) => {
                column.typed::<ByteArrayType>().write_batch(v, defs, None)?;
                v.clear();
            }
            Values::Flag(v) => {
                column.typed::<BoolType>().write_batch(v, defs, None)?;
                v.clear();
            }
        }
        self.defs.clear();
        Ok(())
    }
}

/// One row being filled, column by column in the table's order. Giving a column a value of
/// another kind, null to a required column, or too few or too many values is a bug in the
/// table's code, and panics naming the column.
pub struct Row<'t> {
    columns: &'static [Column],
    buffers: &'t mut [Buffer],
    next: usize,
}

impl Row<'_> {
    /// The next column, checked to be of `kind` (an instant is stored as an integer).
    fn slot(&mut self, kind: Kind, present: bool) -> &mut Buffer {
        let c = self
            .columns
            .get(self.next)
            .unwrap_or_else(|| panic!("a value past the last column ({kind:?})"));
        assert_eq!(c.kind, kind, "column {} is not {kind:?}", c.name);
        assert!(present || c.nullable, "column {} cannot be null", c.name);
        let b = &mut self.buffers[self.next];
        if b.nullable {
            b.defs.push(i16::from(present));
        }
        self.next += 1;
        b
    }

    /// A whole number, or null.
    pub fn int(&mut self, v: impl Into<Option<i64>>) -> &mut Self {
        self.number(Kind::Int, v.into())
    }

    /// A count or an id as written (unsigned); past `i64::MAX`, which no count reaches, it
    /// is stored as `i64::MAX`.
    pub fn count(&mut self, v: impl Into<Option<u64>>) -> &mut Self {
        let v = v.into().map(clamp);
        self.number(Kind::Int, v)
    }

    /// An instant, µs since the Unix epoch, or null.
    pub fn time(&mut self, us: Option<u64>) -> &mut Self {
        self.number(Kind::Time, us.map(clamp))
    }

    fn number(&mut self, kind: Kind, v: Option<i64>) -> &mut Self {
        if let (Values::Int(values), Some(v)) = (&mut self.slot(kind, v.is_some()).values, v) {
            values.push(v);
        }
        self
    }

    /// A real number, or null.
    pub fn float(&mut self, v: impl Into<Option<f64>>) -> &mut Self {
        let v = v.into();
        if let (Values::Float(values), Some(v)) =
            (&mut self.slot(Kind::Float, v.is_some()).values, v)
        {
            values.push(v);
        }
        self
    }

    /// Text, or null.
    pub fn text(&mut self, v: Option<&str>) -> &mut Self {
        self.bytes(v.map(ByteArray::from))
    }

    /// Text already held as a Parquet value (cloning one is a reference count, not a copy:
    /// for a value repeated on every row).
    pub fn bytes(&mut self, v: Option<ByteArray>) -> &mut Self {
        if let (Values::Text(values), Some(v)) = (&mut self.slot(Kind::Text, v.is_some()).values, v)
        {
            values.push(v);
        }
        self
    }

    /// A flag.
    pub fn flag(&mut self, v: bool) -> &mut Self {
        if let Values::Flag(values) = &mut self.slot(Kind::Flag, true).values {
            values.push(v);
        }
        self
    }
}

fn clamp(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A Parquet file being written, one row group every `rows_per_group` rows.
pub struct Table<W: Write + Send> {
    columns: &'static [Column],
    buffers: Vec<Buffer>,
    buffered: usize,
    rows_per_group: usize,
    rows: u64,
    file: SerializedFileWriter<W>,
}

impl<W: Write + Send> Table<W> {
    /// A table of `columns` written to `out`, Snappy-compressed, its footer naming the
    /// table (`servebench.table`), the schema's version and the servebench that wrote it.
    pub fn new(
        out: W,
        columns: &'static [Column],
        rows_per_group: usize,
        table: &str,
    ) -> Result<Self> {
        let metadata = [
            ("servebench.table", table),
            ("servebench.schema_version", super::SCHEMA_VERSION),
            ("servebench.version", env!("CARGO_PKG_VERSION")),
        ]
        .into_iter()
        .map(|(k, v)| KeyValue::new(k.to_owned(), v.to_owned()))
        .collect();
        let properties = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_key_value_metadata(Some(metadata))
            .build();
        let file =
            SerializedFileWriter::new(out, Arc::new(schema(columns)?), Arc::new(properties))?;
        Ok(Table {
            columns,
            buffers: columns.iter().map(Buffer::new).collect(),
            buffered: 0,
            rows_per_group: rows_per_group.max(1),
            rows: 0,
            file,
        })
    }

    /// Adds one row, filled by `fill` column by column; writes a row group when the buffers
    /// hold `rows_per_group` rows.
    pub fn push(&mut self, fill: impl FnOnce(&mut Row<'_>)) -> Result<()> {
        let mut row = Row {
            columns: self.columns,
            buffers: &mut self.buffers,
            next: 0,
        };
        fill(&mut row);
        let filled = row.next;
        if filled != self.columns.len() {
            panic!(
                "a row filled {filled} of {} columns (next: {})",
                self.columns.len(),
                self.columns[filled].name
            );
        }
        self.buffered += 1;
        if self.buffered >= self.rows_per_group {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the buffered rows as one row group.
    fn flush(&mut self) -> Result<()> {
        if self.buffered == 0 {
            return Ok(());
        }
        let mut group = self.file.next_row_group()?;
        for buffer in &mut self.buffers {
            let mut column = group
                .next_column()?
                .expect("the schema has a column per buffer");
            buffer.write_into(&mut column)?;
            column.close()?;
        }
        group.close()?;
        self.rows += self.buffered as u64;
        self.buffered = 0;
        Ok(())
    }

    /// Writes the last row group and the footer; the rows written and the output.
    pub fn finish(mut self) -> Result<(u64, W)> {
        self.flush()?;
        let rows = self.rows;
        let mut out = self.file.into_inner()?;
        out.flush()?;
        Ok((rows, out))
    }
}
