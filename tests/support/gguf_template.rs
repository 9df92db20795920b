//! A copy of a GGUF file with another chat template (`tokenizer.chat_template`), for tests
//! that render real templates with llama.cpp and taper on the same model: everything else in
//! the file (vocabulary, special tokens, tensors) stays as it was.
#![allow(dead_code)]

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom};
use std::path::Path;
use taper::engine::gguf::writer::GgufWriter;
use taper::engine::gguf::{GgufHeader, MetaValue};

/// Writes `source` to `dest` with `template` as its chat template.
pub fn with_template(source: &Path, template: &str, dest: &Path) {
    let header = GgufHeader::read(source).expect("read the GGUF header");
    let mut writer = GgufWriter::new();
    for (key, value) in &header.metadata {
        writer.set(key, value.clone());
    }
    writer.set(
        "tokenizer.chat_template",
        MetaValue::String(template.to_string()),
    );
    for t in &header.tensors {
        writer
            .add_tensor(&t.name, t.dtype, &t.dims)
            .expect("the same tensor");
    }
    let mut input = File::open(source).expect("open the GGUF");
    let out = BufWriter::new(File::create(dest).expect("create the copy"));
    let mut tensors = header.tensors.iter();
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
