//! Plain text tables: a header row and left-aligned columns two spaces apart.

/// Renders `rows` under `header`, every line ending in `\n`.
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut text = String::new();
        for (i, cell) in cells.enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            text.push_str(cell);
            let pad = widths[i].saturating_sub(cell.chars().count());
            text.extend(std::iter::repeat_n(' ', pad));
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&mut header.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_line_up() {
        let text = super::render(
            &["FUNCTION", "STATE"],
            &[
                vec!["add".into(), "deployed".into()],
                vec!["count-queens".into(), "missing".into()],
            ],
        );
        assert_eq!(
            text,
            "FUNCTION      STATE\nadd           deployed\ncount-queens  missing\n"
        );
    }
}
