//! A minimal XML well-formedness checker for the chart tests (no XML crate is allowed):
//! balanced tags, quoted and unique attributes, only known entities, no stray `<` or `&`.

/// A parsed element.
#[derive(Debug, Default)]
pub(super) struct Node {
    pub(super) name: String,
    attrs: Vec<(String, String)>,
    pub(super) children: Vec<Node>,
    /// Unescaped character data directly inside this element.
    pub(super) text: String,
}

impl Node {
    pub(super) fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub(super) fn has_class(&self, class: &str) -> bool {
        self.attr("class")
            .is_some_and(|c| c.split(' ').any(|x| x == class))
    }

    /// This node and all descendants, depth first.
    pub(super) fn walk(&self) -> Vec<&Node> {
        let mut out = vec![self];
        for c in &self.children {
            out.extend(c.walk());
        }
        out
    }

    pub(super) fn title(&self) -> Option<&str> {
        self.children
            .iter()
            .find(|c| c.name == "title")
            .map(|c| c.text.as_str())
    }
}

struct Parser<'a> {
    s: &'a str,
    i: usize,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.s[self.i..]
    }

    fn skip_ws(&mut self) {
        let n = self.rest().len() - self.rest().trim_start().len();
        self.i += n;
    }

    fn expect(&mut self, t: &str) -> Result<(), String> {
        if self.rest().starts_with(t) {
            self.i += t.len();
            Ok(())
        } else {
            Err(format!("expected {t:?} at byte {}", self.i))
        }
    }

    fn name(&mut self) -> Result<String, String> {
        let ok = |c: char, first: bool| {
            c.is_ascii_alphabetic()
                || c == '_'
                || (!first && (c.is_ascii_digit() || "-.:".contains(c)))
        };
        let mut end = self.i;
        for (k, c) in self.rest().char_indices() {
            if !ok(c, k == 0) {
                break;
            }
            end = self.i + k + c.len_utf8();
        }
        if end == self.i {
            return Err(format!("bad name at byte {}", self.i));
        }
        let n = self.s[self.i..end].to_string();
        self.i = end;
        Ok(n)
    }

    fn element(&mut self) -> Result<Node, String> {
        self.expect("<")?;
        let mut node = Node {
            name: self.name()?,
            ..Node::default()
        };
        loop {
            let before = self.i;
            self.skip_ws();
            if self.rest().starts_with("/>") {
                self.i += 2;
                return Ok(node);
            }
            if self.rest().starts_with('>') {
                self.i += 1;
                break;
            }
            if self.i == before {
                return Err(format!("no space before attribute at byte {}", self.i));
            }
            let key = self.name()?;
            self.skip_ws();
            self.expect("=")?;
            self.skip_ws();
            let quote = self.rest().chars().next().ok_or("eof in tag")?;
            if quote != '"' && quote != '\'' {
                return Err(format!("unquoted attribute {key}"));
            }
            self.i += 1;
            let end = self.rest().find(quote).ok_or("unterminated attribute")?;
            let raw = &self.s[self.i..self.i + end];
            if raw.contains('<') {
                return Err(format!("'<' in attribute {key}"));
            }
            self.i += end + 1;
            if node.attrs.iter().any(|(k, _)| *k == key) {
                return Err(format!("duplicate attribute {key}"));
            }
            node.attrs.push((key, unescape(raw)?));
        }
        loop {
            if self.rest().starts_with("</") {
                self.i += 2;
                let close = self.name()?;
                self.skip_ws();
                self.expect(">")?;
                if close != node.name {
                    return Err(format!("</{close}> closes <{}>", node.name));
                }
                return Ok(node);
            } else if self.rest().starts_with("<!--") {
                let end = self.rest().find("-->").ok_or("unterminated comment")?;
                self.i += end + 3;
            } else if self.rest().starts_with('<') {
                node.children.push(self.element()?);
            } else {
                let end = self
                    .rest()
                    .find('<')
                    .ok_or(format!("unclosed <{}>", node.name))?;
                node.text
                    .push_str(&unescape(&self.s[self.i..self.i + end])?);
                self.i += end;
            }
        }
    }
}

/// Resolves the five XML entities and character references; anything else is an error.
fn unescape(raw: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = raw;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let semi = rest[amp..].find(';').ok_or("bare '&'")?;
        let ent = &rest[amp + 1..amp + semi];
        let c = match ent {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            _ => {
                let code = if let Some(h) = ent.strip_prefix("#x") {
                    u32::from_str_radix(h, 16).ok()
                } else {
                    ent.strip_prefix('#').and_then(|d| d.parse().ok())
                };
                code.and_then(char::from_u32)
                    .ok_or(format!("unknown entity &{ent};"))?
            }
        };
        out.push(c);
        rest = &rest[amp + semi + 1..];
    }
    out.push_str(rest);
    if let Some(c) = out
        .chars()
        .find(|&c| (c as u32) < 0x20 && !"\t\n\r".contains(c))
    {
        return Err(format!("control character {:?}", c));
    }
    Ok(out)
}

/// Parses one well-formed XML element (an optional prolog aside) or says why not.
pub(super) fn parse(s: &str) -> Result<Node, String> {
    let mut p = Parser { s, i: 0 };
    p.skip_ws();
    if p.rest().starts_with("<?") {
        p.i += p.rest().find("?>").ok_or("bad prolog")? + 2;
        p.skip_ws();
    }
    let root = p.element()?;
    p.skip_ws();
    if p.i != s.len() {
        return Err(format!("content after root at byte {}", p.i));
    }
    Ok(root)
}

#[test]
fn checker_rejects_ill_formed_markup() {
    assert!(parse("<a><b/></a>").is_ok());
    assert!(parse("<a x='1' y=\"&lt;&#39;&#x41;\">t &amp; u</a>").is_ok());
    for bad in [
        "<a><b></a>",
        "<a x=1/>",
        "<a x='1' x='2'/>",
        "<a>&</a>",
        "<a>&nbsp;</a>",
        "<a x='<'/>",
        "<a></a><b/>",
        "<a>",
        "<a x='1'y='2'/>",
    ] {
        assert!(parse(bad).is_err(), "{bad}");
    }
}
