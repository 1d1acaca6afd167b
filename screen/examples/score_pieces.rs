//! Prints the detector's score of every piece of a definition (JSON on stdin).
use std::io::Read as _;
fn main() -> anyhow::Result<()> {
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text)?;
    let tool: quiver_proto::ToolDef = serde_json::from_str(&text)?;
    let d = quiver_screen::detector::Detector::shipped();
    let fields = quiver_screen::text::fields(&tool);
    for p in d.pieces(&tool) {
        let f = &fields[p.field];
        let piece: String = f.text.chars().skip(p.start).take(p.end - p.start).collect();
        println!(
            "{:.3} {} {:?}",
            d.classifier().score(&p.vector),
            f.path,
            piece
        );
    }
    Ok(())
}
