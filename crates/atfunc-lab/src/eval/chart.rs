//! The bar chart of a report: accuracy and valid answers per mode, as SVG.

use super::report::Report;
use plotters::prelude::*;

/// Width and height of the chart, in pixels.
const SIZE: (u32, u32) = (900, 420);

/// Draws `report` as an SVG bar chart (two bars per mode: accuracy and valid answers, in
/// percent) and returns the SVG text.
pub fn chart_svg(report: &Report, title: &str) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        draw(&root, report, title).map_err(|e| format!("cannot draw the chart: {e}"))?;
        root.present()
            .map_err(|e| format!("cannot draw the chart: {e}"))?;
    }
    Ok(svg)
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    report: &Report,
    title: &str,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let n = report.modes.len().max(1);
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(48)
        .build_cartesian_2d(0f64..n as f64, 0f64..100f64)?;
    let names: Vec<String> = report.modes.iter().map(|m| report.label(&m.mode)).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n * 2 + 1)
        .x_label_formatter(&|x| {
            // A label under the middle of each mode's pair of bars only.
            let slot = x - x.floor();
            if (slot - 0.5).abs() < 1e-6 {
                names.get(x.floor() as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|y| format!("{y:.0}"))
        .y_desc("% of cases")
        .draw()?;
    let accuracy = RGBColor(52, 101, 164);
    let valid = RGBColor(115, 210, 22);
    for (i, mode) in report.modes.iter().enumerate() {
        let x = i as f64;
        let bars = [
            (x + 0.1, mode.all.accuracy() * 100.0, accuracy),
            (x + 0.5, mode.all.valid_share() * 100.0, valid),
        ];
        for (left, height, color) in bars {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(left, 0.0), (left + 0.38, height)],
                color.filled(),
            )))?;
            chart.draw_series(std::iter::once(Text::new(
                format!("{height:.0}%"),
                (left + 0.08, height + 4.0),
                ("sans-serif", 13),
            )))?;
        }
    }
    chart
        .draw_series(std::iter::once(Rectangle::new(
            [(0.0, -1.0), (0.0, -1.0)],
            accuracy.filled(),
        )))?
        .label("accuracy")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], accuracy.filled()));
    chart
        .draw_series(std::iter::once(Rectangle::new(
            [(0.0, -1.0), (0.0, -1.0)],
            valid.filled(),
        )))?
        .label("valid (every call binds)")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], valid.filled()));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
