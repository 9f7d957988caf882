//! Generated blocks inside a hand-written document: the text between
//! `<!-- BEGIN generated:NAME -->` and `<!-- END generated:NAME -->` is replaced, everything
//! else is kept byte for byte.

use std::path::Path;

use crate::error::CompareError;

/// Replaces the block `name` of `doc` by `content` (a trailing newline is added if missing).
pub fn replace_block(
    doc: &str,
    name: &str,
    content: &str,
    path: &Path,
) -> Result<String, CompareError> {
    let begin = format!("<!-- BEGIN generated:{name} -->");
    let end = format!("<!-- END generated:{name} -->");
    let missing = || CompareError::MissingBlock {
        path: path.to_path_buf(),
        name: name.into(),
    };
    let start = doc.find(&begin).ok_or_else(missing)? + begin.len();
    let stop = start + doc[start..].find(&end).ok_or_else(missing)?;
    let mut body = content.to_string();
    if !body.ends_with('\n') {
        body.push('\n');
    }
    Ok(format!("{}\n{}{}", &doc[..start], body, &doc[stop..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_only_the_block() {
        let doc = "intro\n<!-- BEGIN generated:t -->\nold\n<!-- END generated:t -->\noutro\n";
        let out = replace_block(doc, "t", "new", Path::new("d.md")).unwrap();
        assert_eq!(
            out,
            "intro\n<!-- BEGIN generated:t -->\nnew\n<!-- END generated:t -->\noutro\n"
        );
        // Idempotent.
        assert_eq!(
            replace_block(&out, "t", "new", Path::new("d.md")).unwrap(),
            out
        );
        assert!(matches!(
            replace_block(doc, "u", "x", Path::new("d.md")),
            Err(CompareError::MissingBlock { .. })
        ));
    }
}
