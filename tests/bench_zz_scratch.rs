use std::time::Instant;
use taper::bench::shape::{write_shape_file, ShapeSource};
#[test]
#[ignore]
fn scratch_write_shapes() {
    for name in [
        "smollm2-135m",
        "qwen2.5-0.5b",
        "qwen3-0.6b",
        "gemma3-270m",
        "llama3.2-1b",
        "phi3-mini",
        "phi4-mini",
        "qwen3-4b",
    ] {
        let e = taper::catalog::find(name).unwrap();
        let t = Instant::now();
        let path = std::path::PathBuf::from(format!("/tmp/shapes/{name}.gguf"));
        let n = write_shape_file(ShapeSource::from_entry(e).unwrap(), &path).unwrap();
        eprintln!(
            "{name}: {n} bytes (catalogue {}) in {:.1}s",
            e.size_bytes,
            t.elapsed().as_secs_f64()
        );
    }
}
