//! The tools offered to the model: the enabled tools of the ready servers under names that
//! are unique across servers and fit what function names allow (`[A-Za-z0-9_-]`, 64 at most).
//! A name two servers share becomes `SERVER_TOOL` for both; the list is sorted, so the same
//! servers always give the model the same tools in the same order.

use super::config::ServerConfig;
use super::types::{OfferedTool, ToolInfo};
use std::collections::{BTreeMap, BTreeSet};

/// One ready server: its name, its config, its tools.
pub struct Ready<'a> {
    pub server: &'a str,
    pub config: &'a ServerConfig,
    pub tools: &'a [ToolInfo],
}

pub fn offered(ready: &[Ready]) -> Vec<OfferedTool> {
    let visible: Vec<(&Ready, &ToolInfo)> = ready
        .iter()
        .flat_map(|r| r.tools.iter().map(move |t| (r, t)))
        .filter(|(r, t)| r.config.tool_enabled(&t.name))
        .collect();
    let mut servers_of: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    for (r, t) in &visible {
        servers_of
            .entry(model_name(&t.name))
            .or_default()
            .insert(r.server);
    }
    let mut taken = BTreeSet::new();
    let mut tools: Vec<OfferedTool> = visible
        .iter()
        .map(|(r, t)| {
            let plain = model_name(&t.name);
            let shared = servers_of.get(&plain).is_some_and(|s| s.len() > 1);
            let wanted = if shared {
                model_name(&format!("{}_{}", r.server, t.name))
            } else {
                plain
            };
            let name = unique(wanted, &mut taken);
            OfferedTool {
                spec: crate::protocol::Tool {
                    name: name.clone(),
                    description: t.description.clone(),
                    parameters: t.input_schema.clone(),
                },
                name,
                server: r.server.to_string(),
                tool: t.name.clone(),
                approval: r.config.approval(&t.name),
            }
        })
        .collect();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    tools
}

/// A function name models and chat templates accept: other characters become `_`.
fn model_name(name: &str) -> String {
    let fits = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let name: String = name
        .chars()
        .map(|c| if fits(c) { c } else { '_' })
        .take(64)
        .collect();
    if name.is_empty() {
        "_".into()
    } else {
        name
    }
}

/// `wanted`, or `wanted_2`, `wanted_3`, ... when one server itself repeats a name (or a
/// `SERVER_TOOL` meets another server's plain name).
fn unique(wanted: String, taken: &mut BTreeSet<String>) -> String {
    let mut name = wanted.clone();
    let mut n = 2;
    while taken.contains(&name) {
        name = format!("{wanted}_{n}");
        n += 1;
    }
    taken.insert(name.clone());
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::config::{Approval, ToolConfig};

    fn tool(name: &str) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            description: Some(format!("does {name}")),
            input_schema: serde_json::json!({"type": "object"}),
        }
    }

    #[test]
    fn a_shared_name_is_prefixed_with_the_server_for_both_and_the_list_is_sorted() {
        let a = ServerConfig::default();
        let mut b = ServerConfig {
            approve: Some(Approval::Always),
            ..ServerConfig::default()
        };
        b.tools.insert(
            "hidden".into(),
            ToolConfig {
                enabled: Some(false),
                approve: None,
            },
        );
        let (ta, tb) = (
            [tool("echo"), tool("zeta")],
            [tool("echo"), tool("hidden"), tool("a.b")],
        );
        let ready = [
            Ready {
                server: "one",
                config: &a,
                tools: &ta,
            },
            Ready {
                server: "two",
                config: &b,
                tools: &tb,
            },
        ];
        let got = offered(&ready);
        let names: Vec<_> = got.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a_b", "one_echo", "two_echo", "zeta"]);
        let two_echo = &got[2];
        assert_eq!(
            (two_echo.server.as_str(), two_echo.tool.as_str()),
            ("two", "echo")
        );
        assert_eq!(
            (two_echo.approval, got[3].approval),
            (Approval::Always, Approval::Ask)
        );
        assert_eq!(got[0].tool, "a.b");
        assert_eq!(two_echo.spec.name, "two_echo");
    }
}
