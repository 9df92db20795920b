//! The stats panel: how fast, how big, how full. Model facts, the phase (with a progress bar
//! while the prompt is read), time to first token, prompt and decode rates with a sparkline,
//! tokens, the context gauge, cached tokens, memory and threads. On a short terminal the
//! least important rows give way first.

use super::theme;
use crate::stats::human_bytes;
use crate::tui::state::{Phase, State, TurnPhase};
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Gauge, Paragraph, Sparkline};
use ratatui::Frame;

/// Spinner frames for phases without a measurable progress (loading).
const SPINNER: [&str; 4] = ["◐", "◓", "◑", "◒"];

enum Widget {
    Text(Line<'static>),
    /// A progress bar: ratio and label.
    Bar(f64, String),
    /// The decode-rate sparkline, two rows high.
    Spark,
}

/// One row of the panel; lower `keep` rows are dropped last when space runs out.
struct Row {
    keep: u8,
    widget: Widget,
}

fn text(keep: u8, line: Line<'static>) -> Row {
    Row {
        keep,
        widget: Widget::Text(line),
    }
}

fn field(keep: u8, label: &str, value: impl Into<String>, style: Style) -> Row {
    text(
        keep,
        Line::from(vec![
            Span::styled(format!("{label:<9}"), theme::dim()),
            Span::styled(value.into(), style),
        ]),
    )
}

fn or_dash<T>(v: Option<T>, f: impl FnOnce(T) -> String) -> String {
    v.map(f).unwrap_or_else(|| "–".into())
}

fn params(n: u64) -> String {
    match n {
        0 => "?".into(),
        n if n >= 1_000_000_000 => format!("{:.1}B", n as f64 / 1e9),
        n => format!("{}M", (n as f64 / 1e6).round()),
    }
}

pub fn render(frame: &mut Frame, area: Rect, state: &State) {
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme::dim())
        .title(Span::styled(" stats ", theme::title()));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let inner = Rect {
        x: inner.x + 1,
        width: inner.width.saturating_sub(1),
        ..inner
    };
    let mut rows = rows(state);
    // Drop the least important rows until the rest fit.
    while rows.iter().map(height).sum::<u16>() > inner.height {
        let Some(worst) = rows.iter().map(|r| r.keep).max() else {
            break;
        };
        let Some(at) = rows.iter().rposition(|r| r.keep == worst) else {
            break;
        };
        rows.remove(at);
    }
    let mut y = inner.y;
    let rates: Vec<u64> = state.stats.rates.iter().copied().collect();
    for row in rows {
        let h = height(&row);
        let rect = Rect {
            y,
            height: h,
            ..inner
        };
        y += h;
        match row.widget {
            Widget::Text(line) => frame.render_widget(Paragraph::new(line), rect),
            Widget::Bar(ratio, label) => frame.render_widget(
                Gauge::default()
                    .gauge_style(theme::gauge())
                    .ratio(ratio.clamp(0.0, 1.0))
                    .label(label),
                rect,
            ),
            Widget::Spark => {
                let recent = &rates[rates.len().saturating_sub(rect.width as usize)..];
                frame.render_widget(
                    Sparkline::default().data(recent).style(theme::sparkline()),
                    rect,
                );
            }
        }
    }
}

fn height(row: &Row) -> u16 {
    match row.widget {
        Widget::Spark => 2,
        _ => 1,
    }
}

/// Name, architecture, quantization, size and load time, for the model loading or loaded.
/// `load` is the row's label and time: `load`, or `switch` for a model that was kept loaded.
fn model_rows(
    rows: &mut Vec<Row>,
    facts: (&String, &String, &String, u64, u64),
    load: (&'static str, String),
) {
    let (name, arch, quant, file_size, parameters) = facts;
    let plain = Style::default();
    rows.push(text(0, Line::styled(name.clone(), theme::model_label())));
    rows.push(field(3, "arch", arch.clone(), plain));
    rows.push(field(3, "quant", quant.clone(), plain));
    let size = format!("{} · {} params", human_bytes(file_size), params(parameters));
    rows.push(field(3, "size", size, plain));
    rows.push(field(2, load.0, load.1, plain));
}

/// A remote model: its name, where it is served, and how long connecting took.
fn remote_rows(rows: &mut Vec<Row>, name: &str, server: &str, connect: String) {
    let plain = Style::default();
    rows.push(text(
        0,
        Line::styled(name.to_string(), theme::model_label()),
    ));
    rows.push(field(3, "arch", "remote", plain));
    rows.push(field(3, "server", server.to_string(), plain));
    rows.push(field(2, "connect", connect, plain));
}

/// Whether the answers come from a remote server (figures are then measured on arrival).
fn remote(state: &State) -> bool {
    let loading = state
        .model
        .loading
        .as_ref()
        .map(|l| l.entry.remote.is_some());
    let loaded = state.model.loaded.as_ref().map(|i| i.remote.is_some());
    loading.or(loaded).unwrap_or(false)
}

/// What the server itself reported about the last answer, labelled as the server's.
fn server_rows(rows: &mut Vec<Row>, state: &State) {
    let Some(server) = state.stats.last.as_ref().and_then(|u| u.server.as_ref()) else {
        return;
    };
    let plain = Style::default();
    if let Some(r) = server.decode_tok_s {
        rows.push(field(1, "srv dec", format!("{r:.1} tok/s (server)"), plain));
    }
    if let Some(r) = server.prompt_tok_s {
        rows.push(field(2, "srv pp", format!("{r:.1} tok/s (server)"), plain));
    }
}

/// The panel's rows, top to bottom: the model, the phase, the figures.
fn rows(state: &State) -> Vec<Row> {
    let mut rows = Vec::new();
    model_section(&mut rows, state);
    rows.push(text(5, Line::default()));
    phase_rows(&mut rows, state);
    rate_rows(&mut rows, state);
    context_rows(&mut rows, state);
    rows
}

/// The model loading, or loaded, or a hint when there is none.
fn model_section(rows: &mut Vec<Row>, state: &State) {
    // While a load runs the old model is already gone (the worker frees it first).
    match (&state.model.loading, &state.model.loaded) {
        (Some(loading), _) if loading.entry.remote.is_some() => {
            let e = &loading.entry;
            remote_rows(rows, &e.name, &e.quantization, "…".into());
        }
        (Some(loading), _) => {
            let e = &loading.entry;
            let facts = (
                &e.name,
                &e.architecture,
                &e.quantization,
                e.file_size,
                e.parameters,
            );
            model_rows(rows, facts, ("load", "…".into()));
        }
        (None, Some(info)) if info.remote.is_some() => {
            // The host and port (the quantization column of a remote): a URL would not fit.
            let connect = format!("{:.2} s", info.load_s);
            remote_rows(rows, &info.name, &info.quantization, connect);
        }
        (None, Some(info)) => {
            let facts = (
                &info.name,
                &info.architecture,
                &info.quantization,
                info.file_size,
                info.parameters,
            );
            let load = match info.kept_loaded {
                true => ("switch", format!("{:.2} s · kept loaded", info.load_s)),
                false => ("load", format!("{:.2} s", info.load_s)),
            };
            model_rows(rows, facts, load);
        }
        (None, None) => {
            rows.push(text(0, Line::styled("no model", theme::dim())));
            rows.push(text(2, Line::styled("Ctrl+P picks one", theme::dim())));
        }
    }
}

/// What is going on: a download (with its gauge), a load, the turn's phase, or idle.
fn phase_rows(rows: &mut Vec<Row>, state: &State) {
    if let Some(d) = &state.model.download {
        rows.push(field(
            0,
            "phase",
            format!("downloading {}", d.entry.name),
            theme::warning(),
        ));
        let ratio = if d.total > 0 {
            d.done as f64 / d.total as f64
        } else {
            0.0
        };
        let eta = d
            .eta_s(state.now)
            .map(|s| format!(" · {s:.0} s left"))
            .unwrap_or_default();
        // Short enough for the panel: percent, rate and time left (sizes are in the picker).
        let label = format!(
            "{:.0}% · {}/s{eta}",
            ratio * 100.0,
            human_bytes(d.rate(state.now) as u64)
        );
        rows.push(Row {
            keep: 0,
            widget: Widget::Bar(ratio.clamp(0.0, 1.0), label),
        });
    } else if let Some(loading) = &state.model.loading {
        let elapsed = state.now.saturating_duration_since(loading.started);
        let spin = SPINNER[(elapsed.as_millis() / 250) as usize % SPINNER.len()];
        let value = format!("{spin} loading {:.1} s", elapsed.as_secs_f64());
        rows.push(field(0, "phase", value, theme::warning()));
    } else {
        turn_rows(rows, state);
    }
}

/// The running turn's phase (a progress bar while the prompt is read), or idle.
fn turn_rows(rows: &mut Vec<Row>, state: &State) {
    let turn = match state.phase {
        Phase::Answering { .. } => state.stats.turn.as_ref().map(|t| t.phase),
        Phase::Tools => return rows.push(field(0, "phase", "calling tools", theme::info())),
        Phase::Idle => None,
    };
    match turn {
        Some(TurnPhase::ReadingPrompt { done, total }) => {
            rows.push(field(0, "phase", "reading prompt", theme::warning()));
            // Progress comes after each chunk of the prompt; before the first, it started.
            let bar = match total {
                0 => Widget::Bar(0.0, "starting".into()),
                _ => Widget::Bar(done as f64 / total as f64, format!("{done}/{total} tok")),
            };
            rows.push(Row {
                keep: 0,
                widget: bar,
            });
        }
        Some(TurnPhase::Generating) => rows.push(field(0, "phase", "generating", theme::info())),
        None => rows.push(field(0, "phase", "idle", Style::default())),
    }
}

/// Time to first token, prompt and decode rates with the sparkline, tokens generated.
fn rate_rows(rows: &mut Vec<Row>, state: &State) {
    let plain = Style::default();
    let s = &state.stats;
    rows.push(field(
        1,
        "TTFT",
        or_dash(s.ttft_s(), |t| format!("{t:.3} s")),
        plain,
    ));
    // A remote's rates are measured here as tokens arrive; the server's own come after.
    let here = if remote(state) { " here" } else { "" };
    let rate = |v: f64| format!("{v:.1} tok/s{here}");
    rows.push(field(1, "prompt", or_dash(s.prompt_tok_s(), rate), plain));
    rows.push(field(
        0,
        "decode",
        or_dash(s.decode_tok_s(), rate),
        theme::model_label(),
    ));
    rows.push(Row {
        keep: 4,
        widget: Widget::Spark,
    });
    rows.push(field(
        1,
        "tokens",
        or_dash(s.generated(), |n| n.to_string()),
        plain,
    ));
    if let Some((kept, per_pass)) = s.speculation() {
        let value = format!("{:.0}% kept · {per_pass:.1} tok/pass", kept * 100.0);
        rows.push(field(2, "drafts", value, plain));
    }
    server_rows(rows, state);
}

/// The MCP tools: how many the model is offered, the call running or waiting, the last
/// call's time. Nothing when no server offers any and none was called.
fn tool_row(rows: &mut Vec<Row>, state: &State) {
    let tools = &state.tools;
    let value = if let Some((call, started)) = tools.running() {
        let s = state.now.saturating_duration_since(started).as_secs_f64();
        format!("{} running {s:.1} s", call.name)
    } else if let Some(call) = tools.asking() {
        format!("{} waits: y/a/n", call.name)
    } else if !tools.offered.is_empty() || state.stats.tool_s.is_some() {
        let last = state
            .stats
            .tool_s
            .map_or(String::new(), |s| format!(" · last {s:.1} s"));
        format!("{} offered{last}", tools.offered.len())
    } else {
        return;
    };
    rows.push(field(2, "tools", value, Style::default()));
}

/// The context used (with its gauge), cached tokens, the KV cache's format and full size,
/// memory, threads and the kernel path, dropped messages.
fn context_rows(rows: &mut Vec<Row>, state: &State) {
    let plain = Style::default();
    let s = &state.stats;
    let context_size = state.model.loaded.as_ref().map(|i| i.context_size);
    let used = s.context_used();
    // A remote that does not say its context size has a context of 0 here.
    let limit = |c: usize| match c {
        0 => format!("{used} / unknown"),
        c => format!("{used} / {c}"),
    };
    rows.push(field(1, "context", or_dash(context_size, limit), plain));
    let ratio = match context_size {
        Some(c) if c > 0 => used as f64 / c as f64,
        _ => 0.0,
    };
    rows.push(Row {
        keep: 2,
        widget: Widget::Bar(ratio, format!("{:.0}%", ratio * 100.0)),
    });
    let cached = s.cached();
    rows.push(field(
        2,
        "cached",
        or_dash(cached, |c| format!("{c} tok reused")),
        plain,
    ));
    tool_row(rows, state);
    // What the cache will take at a full context, so the memory row's growth is no surprise.
    // A remote's cache is the server's business.
    let cache = state
        .model
        .loaded
        .as_ref()
        .filter(|i| i.remote.is_none())
        .map(|i| (i.cache_type, i.cache_bytes));
    rows.push(field(
        2,
        "KV cache",
        or_dash(cache, |(t, bytes)| {
            format!("{t}, {} full", human_bytes(bytes))
        }),
        plain,
    ));
    let memory = match (s.rss, s.peak_rss) {
        (Some(r), Some(p)) => format!("{} (peak {})", human_bytes(r), human_bytes(p)),
        (Some(r), None) => human_bytes(r),
        _ => "–".into(),
    };
    rows.push(field(1, "memory", memory, plain));
    let threads = state
        .model
        .loaded
        .as_ref()
        .filter(|i| i.remote.is_none())
        .map(|i| (i.threads, i.kernels));
    rows.push(field(
        2,
        "threads",
        or_dash(threads, |(t, kernels)| format!("{t}, {kernels}")),
        plain,
    ));
    if s.last.as_ref().is_some_and(|u| u.dropped_messages > 0) {
        rows.push(field(1, "dropped", "oldest messages", theme::warning()));
    }
}
