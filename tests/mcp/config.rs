//! The `[mcp]` table: what it accepts, what it refuses with a sentence, imports of
//! Claude-Desktop-style JSON files, and secrets kept out of Debug output.

use std::path::Path;
use taper::config::Config;
use taper::mcp::{Approval, McpConfig};

fn parse(text: &str) -> anyhow::Result<Config> {
    Config::parse(text, Path::new("/home/u/.config/taper/config.toml"))
}

fn error(text: &str) -> String {
    parse(text).expect_err("should be refused").to_string()
}

#[test]
fn a_full_mcp_table_parses_with_defaults_for_what_is_left_out() {
    let c = parse(
        r#"
[mcp]
max_rounds = 4
timeout_s = 30
[mcp.servers.files]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
env = { TOKEN = "t0ken" }
cwd = "/tmp"
approve = "always"
timeout_s = 5
[mcp.servers.files.tools.write_file]
approve = "ask"
[mcp.servers.files.tools.delete]
enabled = false
[mcp.servers.web]
url = "http://127.0.0.1:8931/mcp"
headers = { Authorization = "Bearer abc" }
"#,
    )
    .unwrap();
    let mcp = &c.mcp;
    assert_eq!((mcp.max_rounds(), mcp.max_result_chars()), (4, 8000));
    let files = &mcp.servers["files"];
    assert_eq!(files.approval("read_file"), Approval::Always);
    assert_eq!(files.approval("write_file"), Approval::Ask);
    assert!(!files.tool_enabled("delete") && files.tool_enabled("read_file"));
    assert_eq!(mcp.timeout(files).as_secs(), 5);
    let web = &mcp.servers["web"];
    assert_eq!(
        (web.approval("x"), mcp.timeout(web).as_secs()),
        (Approval::Ask, 30)
    );
    assert_eq!(web.transport(), "http://127.0.0.1:8931/mcp");
    assert_eq!(
        files.transport(),
        "stdio: npx -y @modelcontextprotocol/server-filesystem /tmp"
    );
    let defaults = McpConfig::default();
    assert_eq!(
        (defaults.max_rounds(), defaults.max_result_chars()),
        (8, 8000)
    );
}

#[test]
fn unknown_keys_are_refused_at_every_level() {
    assert!(error("[mcp]\nmax_round = 3\n").contains("max_round"));
    assert!(error("[mcp.servers.a]\ncommand = \"x\"\ncomand = \"y\"\n").contains("comand"));
    let tool = "[mcp.servers.a]\ncommand = \"x\"\n[mcp.servers.a.tools.t]\naprove = \"ask\"\n";
    assert!(error(tool).contains("aprove"));
    assert!(error("[mcp.servers.a]\ncommand = \"x\"\napprove = \"maybe\"\n").contains("maybe"));
}

#[test]
fn a_server_needs_exactly_one_of_command_and_url() {
    let both = "[mcp.servers.a]\ncommand = \"x\"\nurl = \"http://h/mcp\"\n";
    assert!(error(both).contains("both `command` and `url`"));
    assert!(error("[mcp.servers.a]\nenabled = true\n").contains("needs `command` (stdio) or `url`"));
    let ftp = "[mcp.servers.a]\nurl = \"ftp://h\"\n";
    assert!(error(ftp).contains("expected http:// or https://"));
    let args = "[mcp.servers.a]\nurl = \"http://h\"\nargs = [\"x\"]\n";
    assert!(error(args).contains("for `command` servers"));
    let name = "[mcp.servers.\"my server\"]\ncommand = \"x\"\n";
    assert!(error(name).contains("letters, digits"));
    assert!(error("[mcp.servers.a]\ncommand = \"x\"\ntimeout_s = 0\n").contains("at least 1"));
}

#[test]
fn secrets_never_show_in_debug_output() {
    let c = parse(
        "[mcp.servers.a]\ncommand = \"x\"\nenv = { KEY = \"sk-secret-1\" }\n\
         [mcp.servers.b]\nurl = \"http://h/mcp\"\nheaders = { Authorization = \"Bearer sk-secret-2\" }\n",
    )
    .unwrap();
    let shown = format!("{c:?} {:#?}", c.mcp);
    assert!(!shown.contains("sk-secret"), "{shown}");
    assert!(shown.contains("KEY") && shown.contains("Authorization"));
}

#[test]
fn an_imported_json_file_adds_servers_and_config_toml_wins_on_a_shared_name() {
    let dir = tempfile::tempdir().unwrap();
    let claude = dir.path().join("claude.json");
    std::fs::write(
        &claude,
        r#"{"globalShortcut": "", "mcpServers": {
            "shared": {"command": "from-json"},
            "web": {"type": "http", "url": "https://example.com/mcp", "headers": {"X-Key": "k"}},
            "fs": {"command": "npx", "args": ["-y", "server"], "env": {"A": "b"}, "disabled": true}
        }}"#,
    )
    .unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        "[mcp]\nimport = [\"claude.json\"]\n[mcp.servers.shared]\ncommand = \"from-toml\"\n",
    )
    .unwrap();
    let c = Config::load(&config, true).unwrap();
    let all = c.mcp.all_servers();
    assert_eq!(all.keys().collect::<Vec<_>>(), ["fs", "shared", "web"]);
    assert_eq!(all["shared"].command.as_deref(), Some("from-toml"));
    assert_eq!(all["web"].url.as_deref(), Some("https://example.com/mcp"));
    assert!(!all["fs"].enabled());
}

#[test]
fn a_broken_or_missing_import_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\"mcpServers\": {\"a\": {\"command\": 3}}}").unwrap();
    let config = dir.path().join("config.toml");
    let load = |import: &str| {
        std::fs::write(&config, format!("[mcp]\nimport = [\"{import}\"]\n")).unwrap();
        Config::load(&config, true).unwrap_err().to_string()
    };
    let e = load(&broken.display().to_string());
    assert!(
        e.contains("broken.json") && e.contains("not an MCP servers file"),
        "{e}"
    );
    let e = load("missing.json");
    assert!(
        e.contains("missing.json") && e.contains("cannot read"),
        "{e}"
    );
    std::fs::write(
        &broken,
        r#"{"mcpServers": {"a": {"url": "http://h", "type": "grpc"}}}"#,
    )
    .unwrap();
    let e = load(&broken.display().to_string());
    assert!(e.contains("broken.json") && e.contains("grpc"), "{e}");
}
