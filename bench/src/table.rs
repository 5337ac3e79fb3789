//! The readable table printed after a run: one row per result, columns padded to their widest
//! cell (counted in characters, since the target column uses `≥`, `≤` and `×`).

use crate::scenario_result::ScenarioResult;

const HEADERS: [&str; 10] =
    ["scenario", "aqs", "unit", "baseline", "baseline value", "ratio", "p50 ms", "p99 ms", "target", "met"];

/// Renders the results as a Markdown table (readable in a terminal and pasteable in the README),
/// followed by the notes and errors of the rows that have them.
pub fn render(results: &[ScenarioResult]) -> String {
    let rows: Vec<[String; 10]> = results.iter().map(row).collect();
    let mut widths = HEADERS.map(|h| h.chars().count());
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    push_row(&mut out, &HEADERS.map(str::to_owned), &widths);
    push_row(&mut out, &widths.map(|w| "-".repeat(w)), &widths);
    for r in &rows {
        push_row(&mut out, r, &widths);
    }
    for r in results {
        if let Some(err) = &r.error {
            out.push_str(&format!("\n{}: error: {err}", r.scenario));
        } else if !r.note.is_empty() {
            out.push_str(&format!("\n{}: {}", r.scenario, r.note));
        }
    }
    out.push('\n');
    out
}

fn row(r: &ScenarioResult) -> [String; 10] {
    [
        r.scenario.clone(),
        number(r.aqs),
        r.unit.clone(),
        r.baseline.clone().unwrap_or_else(|| "-".to_owned()),
        number(r.baseline_value),
        r.ratio.map(|v| format!("{v:.2}×")).unwrap_or_else(|| "-".to_owned()),
        number(r.p50_ms),
        number(r.p99_ms),
        r.target.map(|t| t.describe()).unwrap_or_else(|| "-".to_owned()),
        match (r.met(), &r.error) {
            (_, Some(_)) => "ERROR".to_owned(),
            (Some(true), _) => "yes".to_owned(),
            (Some(false), _) => "NO".to_owned(),
            (None, _) => "-".to_owned(),
        },
    ]
}

/// Large figures without decimals, small ones with enough to be meaningful.
fn number(v: Option<f64>) -> String {
    match v {
        None => "-".to_owned(),
        Some(v) if v.abs() >= 1000.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.2}"),
    }
}

fn push_row(out: &mut String, cells: &[String; 10], widths: &[usize; 10]) {
    out.push('|');
    for (cell, &w) in cells.iter().zip(widths) {
        let pad = w - cell.chars().count();
        out.push(' ');
        out.push_str(cell);
        out.push_str(&" ".repeat(pad));
        out.push_str(" |");
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario_result::Target;

    #[test]
    fn columns_line_up_and_targets_are_judged() {
        let results = vec![
            ScenarioResult::new("publish_single", 41234.0, "msgs/s")
                .compared("floor", Some(50000.0))
                .latency(Some(1.5), Some(7.25))
                .target(Target::RatioAtLeast(0.7)),
            ScenarioResult::new("memory_per_message", 250.0, "B/msg").target(Target::AtMost(200.0)).note("N=1000"),
        ];
        let text = render(&results);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("| scenario "));
        let width = lines[0].chars().count();
        assert!(lines[..4].iter().all(|l| l.chars().count() == width), "{text}");
        assert!(lines[2].contains("| 41234 ") && lines[2].contains("0.82×") && lines[2].contains("| yes "));
        assert!(lines[3].contains("| 250.0 ") && lines[3].contains("≤ 200") && lines[3].contains("| NO "));
        assert!(text.contains("memory_per_message: N=1000"));
    }

    #[test]
    fn errors_are_shown() {
        let r = ScenarioResult::failed("wakeup", "ms", &anyhow::anyhow!("timed out"));
        let text = render(&[r]);
        assert!(text.contains("| ERROR |") && text.contains("wakeup: error: timed out"));
    }
}
