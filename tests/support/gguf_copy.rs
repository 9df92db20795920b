//! Copies of a real GGUF model with one thing changed, for tests: another chat template
//! (`tokenizer.chat_template`; the rest as it was, for tests that render real templates with
//! llama.cpp and taper on the same model), or only its first layers (the same vocabulary,
//! embeddings and output head, a shallower stack: a draft model that shares every token with
//! the model and guesses like it most of the time, not always, without a second download).
#![allow(dead_code)]

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom};
use std::path::Path;
use taper::engine::gguf::writer::GgufWriter;
use taper::engine::gguf::{GgufHeader, MetaValue};

/// Writes `source` to `dest` with `template` as its chat template.
pub fn with_template(source: &Path, template: &str, dest: &Path) {
    let template = MetaValue::String(template.to_string());
    let key = "tokenizer.chat_template".to_string();
    copy(source, dest, |_| true, &[(key, template)]);
}

/// Writes `source` to `dest` with layers `0..layers` alone.
pub fn first_layers(source: &Path, layers: u32, dest: &Path) {
    let header = GgufHeader::read(source).expect("read the GGUF header");
    let count = (header.arch_key("block_count"), MetaValue::U32(layers));
    let keep = |name: &str| layer_of(name).is_none_or(|n| n < layers);
    copy(source, dest, keep, &[count]);
}

/// The layer a tensor belongs to (`blk.N.…`), if any.
fn layer_of(name: &str) -> Option<u32> {
    name.strip_prefix("blk.")?.split('.').next()?.parse().ok()
}

/// Writes the tensors of `source` that `keep` names to `dest`, its metadata with `set` over it.
fn copy(source: &Path, dest: &Path, keep: impl Fn(&str) -> bool, set: &[(String, MetaValue)]) {
    let header = GgufHeader::read(source).expect("read the GGUF header");
    let mut writer = GgufWriter::new();
    for (key, value) in &header.metadata {
        writer.set(key, value.clone());
    }
    for (key, value) in set {
        writer.set(key, value.clone());
    }
    let kept: Vec<_> = header.tensors.iter().filter(|t| keep(&t.name)).collect();
    for t in &kept {
        writer
            .add_tensor(&t.name, t.dtype, &t.dims)
            .expect("the same tensor");
    }
    let mut input = File::open(source).expect("open the GGUF");
    let out = BufWriter::new(File::create(dest).expect("create the copy"));
    let mut tensors = kept.iter();
    writer
        .write(out, |spec, out| {
            // The writer asks for tensors in the order they were added: the header's.
            let t = tensors.next().expect("one tensor per call");
            assert_eq!(t.name, spec.name);
            input.seek(SeekFrom::Start(t.offset))?;
            std::io::copy(&mut (&mut input).take(t.size_bytes), out)?;
            Ok(())
        })
        .expect("write the copy");
}
