//! HTTPS to a remote: a loopback TLS server (Python's `ssl` with a certificate made here by
//! `openssl`, signed by a test CA) answers the model list and a streamed chat. Trusted through
//! the system's roots (`SSL_CERT_FILE`, as rustls-native-certs reads them) the answer arrives;
//! without the CA it is a TLS error naming the certificate, in one sentence.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

const SERVER: &str = r#"
import http.server, json, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        body = json.dumps({"data": [{"id": "m"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body)
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for piece in ["secure", " hello"]:
            chunk = {"choices": [{"delta": {"content": piece}}]}
            self.wfile.write(("data: " + json.dumps(chunk) + "\n\n").encode())
        self.wfile.write(b"data: [DONE]\n\n")
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
s.socket = ctx.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

fn run(cmd: &mut Command) {
    let o = cmd.output().expect("run openssl");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A test CA and a certificate for 127.0.0.1 signed by it.
fn certificates(dir: &Path) {
    let p = |f: &str| dir.join(f).display().to_string();
    let subj = |cn: &str| format!("/CN={cn}");
    run(Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes"])
        .args(["-keyout", &p("ca.key"), "-out", &p("ca.pem"), "-days", "2"])
        .args(["-subj", &subj("taper test CA")]));
    run(Command::new("openssl")
        .args(["req", "-newkey", "rsa:2048", "-nodes"])
        .args([
            "-keyout",
            &p("key.pem"),
            "-out",
            &p("req.csr"),
            "-subj",
            &subj("127.0.0.1"),
        ]));
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    run(Command::new("openssl")
        .args(["x509", "-req", "-in", &p("req.csr")])
        .args([
            "-CA",
            &p("ca.pem"),
            "-CAkey",
            &p("ca.key"),
            "-CAcreateserial",
        ])
        .args([
            "-out",
            &p("cert.pem"),
            "-days",
            "2",
            "-extfile",
            &p("ext.cnf"),
        ]));
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn ask(url: &str, cert_file: &Path) -> (bool, String, String) {
    let home = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_taper"))
        .env("TAPER_HOME", home.path())
        .env("SSL_CERT_FILE", cert_file)
        .env_remove("SSL_CERT_DIR")
        .args(["--remote", url, "ask", "-m", "remote/m", "hi"])
        .output()
        .expect("run taper");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (o.status.success(), text(&o.stdout), text(&o.stderr))
}

#[test]
fn https_works_with_the_systems_roots_and_fails_clearly_without_them() {
    let dir = tempfile::tempdir().unwrap();
    certificates(dir.path());
    std::fs::write(dir.path().join("server.py"), SERVER).unwrap();
    let mut child = Command::new("python3")
        .arg(dir.path().join("server.py"))
        .args([dir.path().join("cert.pem"), dir.path().join("key.pem")])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start python3");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _server = Server(child);
    let port: u16 = line.trim().parse().expect("the server's port");
    let url = format!("https://127.0.0.1:{port}/v1");

    let (ok, out, err) = ask(&url, &dir.path().join("ca.pem"));
    assert!(ok, "{err}");
    assert_eq!(out, "secure hello\n");

    let untrusted = dir.path().join("none.pem");
    std::fs::write(&untrusted, "").unwrap();
    let (ok, _, err) = ask(&url, &untrusted);
    assert!(!ok);
    eprintln!("{err}");
    assert!(
        err.contains("TLS error") && err.to_lowercase().contains("certificate"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
