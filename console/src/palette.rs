//! Tests only: the charts' series colours in `static/console.css`, light and dark, checked the way
//! a reader sees them. Each series is at least 3:1 against the panel (WCAG's non-text contrast),
//! and within one chart every two series stay apart (CIELAB ΔE ≥ 15) with normal vision and as
//! simulated for deuteranopia and protanopia (Machado, Oliveira and Fernandes 2009, severity 1),
//! the red-green colour blindness that made the old greens indistinguishable. Dashes and markers
//! tell them apart as well (the Chromium tests check those).

#![cfg(test)]

const CSS: &str = include_str!("../static/console.css");

/// The series of each chart, as CSS variables.
const CHARTS: [&[&str]; 2] = [&["published", "delivered", "acked", "dead"], &["age", "p50", "p99"]];

type Rgb = [f64; 3];

/// The value of `--{name}` in the block starting at `block` (the light `:root`, or the dark one).
fn var(block: &str, name: &str) -> Rgb {
    let start = CSS.find(block).unwrap_or_else(|| panic!("no {block:?} in console.css"));
    let rule = &CSS[start..];
    let at = rule.find(&format!("--{name}:")).unwrap_or_else(|| panic!("no --{name} after {block:?}"));
    let value = rule[at..].split(':').nth(1).unwrap().split(';').next().unwrap().trim();
    let hex = value.strip_prefix('#').unwrap_or_else(|| panic!("--{name} is {value}, not #rrggbb"));
    let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).unwrap() as f64 / 255.0;
    [byte(0), byte(2), byte(4)]
}

fn linear(c: Rgb) -> Rgb {
    c.map(|v| if v <= 0.04045 { v / 12.92 } else { ((v + 0.055) / 1.055).powf(2.4) })
}

fn luminance(c: Rgb) -> f64 {
    let [r, g, b] = linear(c);
    0.2126 * r + 0.7152 * g + 0.0722 * b
}

fn contrast(a: Rgb, b: Rgb) -> f64 {
    let (x, y) = (luminance(a), luminance(b));
    (x.max(y) + 0.05) / (x.min(y) + 0.05)
}

/// A linear-RGB colour through `m` (a colour-vision simulation), then to CIELAB.
fn lab(c: Rgb, m: &[[f64; 3]; 3]) -> Rgb {
    let l = linear(c);
    let [r, g, b] = m.map(|row| (row[0] * l[0] + row[1] * l[1] + row[2] * l[2]).clamp(0.0, 1.0));
    let x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047;
    let y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
    let z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
    let f = |t: f64| if t > 0.008856 { t.cbrt() } else { 7.787 * t + 16.0 / 116.0 };
    [116.0 * f(y) - 16.0, 500.0 * (f(x) - f(y)), 200.0 * (f(y) - f(z))]
}

const NORMAL: [[f64; 3]; 3] = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
const DEUTERANOPIA: [[f64; 3]; 3] =
    [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]];
const PROTANOPIA: [[f64; 3]; 3] =
    [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]];

#[test]
fn series_colours_stand_out_and_apart_in_light_and_dark() {
    for block in [":root {", "@media (prefers-color-scheme: dark)"] {
        let panel = var(block, "panel");
        for chart in CHARTS {
            for name in chart {
                let c = contrast(var(block, name), panel);
                assert!(c >= 3.0, "{block} --{name}: {c:.2}:1 against the panel");
            }
            for (vision, m) in [("normal", &NORMAL), ("deuteranopia", &DEUTERANOPIA), ("protanopia", &PROTANOPIA)] {
                for (i, a) in chart.iter().enumerate() {
                    for b in &chart[i + 1..] {
                        let (x, y) = (lab(var(block, a), m), lab(var(block, b), m));
                        let delta = ((x[0] - y[0]).powi(2) + (x[1] - y[1]).powi(2) + (x[2] - y[2]).powi(2)).sqrt();
                        assert!(delta >= 15.0, "{block} with {vision}: --{a} and --{b} are {delta:.1} apart");
                    }
                }
            }
        }
    }
}
