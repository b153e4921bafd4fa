//! Our tools against pi 0.73.1's own tools on the same input: each case in
//! `pi-0.73.1/cases.json` was run through pi's real tool code by `pi-0.73.1/record.mjs`, which
//! wrote what pi answered to `pi-0.73.1/outputs.json` (see `pi-0.73.1/README.md`). Here the same
//! case runs through our tools and must give the same answer, text for text.

use base64::Engine;
use pi_coder::{Workspace, coding_tools};
use pi_tool::Content;
use serde_json::{Map, Value, json};

use crate::{call, write_file};

const CASES: &str = include_str!("pi-0.73.1/cases.json");
const OUTPUTS: &str = include_str!("pi-0.73.1/outputs.json");

#[tokio::test]
async fn every_recorded_case_answers_as_pi_does() {
    let cases: Vec<Value> = serde_json::from_str(CASES).expect("cases.json");
    let outputs: Map<String, Value> = serde_json::from_str(OUTPUTS).expect("outputs.json");
    assert_eq!(
        cases.len(),
        outputs.len(),
        "outputs.json is not recorded from cases.json"
    );
    let mut differences = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().expect("name");
        let expected = outputs.get(name).expect("a recorded output for every case");
        let ours = run(case).await;
        if &ours != expected {
            differences.push(format!(
                "item {} `{name}`:\n  pi:   {expected}\n  ours: {ours}",
                case["item"]
            ));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// Builds the case's folder, runs the call on our tools, and describes the answer the way
/// record.mjs describes pi's.
async fn run(case: &Value) -> Value {
    let dir = tempfile::tempdir().expect("temp dir");
    for sub in case["dirs"].as_array().into_iter().flatten() {
        std::fs::create_dir_all(dir.path().join(sub.as_str().expect("dir"))).expect("mkdir");
    }
    for (name, text) in case["files"].as_object().into_iter().flatten() {
        write_file(dir.path(), name, text.as_str().expect("file text"));
    }
    let mut generated = Vec::new();
    for (name, spec) in case["generated"].as_object().into_iter().flatten() {
        let numbers = |key: &str| -> Option<Vec<u32>> {
            spec[key].as_array().map(|values| {
                values
                    .iter()
                    .map(|v| u32::try_from(v.as_u64().expect("number")).expect("u32"))
                    .collect()
            })
        };
        let bytes = if let Some(size) = spec["paddedPng"].as_u64() {
            padded_png(usize::try_from(size).expect("size"))
        } else if let Some(dims) = numbers("solidPng") {
            solid_png(dims[0], dims[1])
        } else if let Some(spec) = numbers("orientedJpeg") {
            oriented_jpeg(
                spec[0],
                spec[1],
                u8::try_from(spec[2]).expect("orientation"),
            )
        } else {
            panic!("unknown generated file {spec}")
        };
        write_file(dir.path(), name, &bytes);
        generated.push(base64::engine::general_purpose::STANDARD.encode(bytes));
    }
    let mut workspace = Workspace::new(dir.path()).with_temp_dir(dir.path());
    if let Some(shell) = case["shell"].as_str() {
        workspace = workspace.with_shell(shell);
    }
    let tools = coding_tools(workspace);
    let tool = case["tool"].as_str().expect("tool");
    let result = call(&tools, tool, case["args"].clone()).await;
    let shown_dir = dir.path().display().to_string();
    let unordered = case["unordered"].as_bool().unwrap_or(false);
    let mut content: Vec<Value> = result
        .content
        .iter()
        .map(|part| match part {
            Content::Text { text } => {
                let text = hide_log_path(&text.replace(&shown_dir, "<dir>"));
                json!({"type": "text", "text": if unordered { sorted_lines(&text) } else { text }})
            }
            Content::Image { data, mime_type } => json!({
                "type": "image",
                "mimeType": mime_type,
                "unchanged": generated.contains(data),
            }),
        })
        .collect();
    if let Some(edited) = case["edited"].as_str() {
        let text = std::fs::read_to_string(dir.path().join(edited)).expect("edited file");
        content.push(json!({"type": "file", "text": text}));
    }
    json!({"isError": result.is_error, "content": content})
}

/// `Full output: <path>]` as `Full output: <log>]`: bash's log has a random name.
fn hide_log_path(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("Full output: ") {
        let after = &rest[start + "Full output: ".len()..];
        let Some(end) = after.find(']') else { break };
        out.push_str(&rest[..start]);
        out.push_str("Full output: <log>]");
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The lines sorted by UTF-16 code units, as JavaScript's `sort()` does, for results whose order
/// pi does not fix (`fd` walks in parallel).
fn sorted_lines(text: &str) -> String {
    let mut lines: Vec<&str> = text.split('\n').collect();
    lines.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
    lines.join("\n")
}

/// The file record.mjs's `paddedPng` writes: a 1x1 RGB PNG with a private `prVt` chunk that
/// pads it to exactly `size` bytes.
fn padded_png(size: usize) -> Vec<u8> {
    fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
        out.extend_from_slice(&u32::try_from(data.len()).expect("chunk size").to_be_bytes());
        let start = out.len();
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        let crc = crc32(&out[start..]);
        out.extend_from_slice(&crc.to_be_bytes());
    }
    let ihdr = [0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0];
    // zlib stream of one scanline: filter byte 0 and one red pixel (Node's deflateSync output).
    let idat = [
        0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0x00, 0x00, 0x03, 0x01, 0x01, 0x00,
    ];
    let signature = b"\x89PNG\r\n\x1a\n";
    let fixed = signature.len() + 3 * 12 + ihdr.len() + idat.len() + 12;
    let mut out = signature.to_vec();
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &idat);
    chunk(&mut out, b"prVt", &vec![b'a'; size - fixed]);
    chunk(&mut out, b"IEND", &[]);
    assert_eq!(out.len(), size);
    out
}

/// The image record.mjs's `solidPng` writes: `width` x `height` RGB pixels of one grey. The
/// bytes may differ from Node's (another deflate); the pixels, and so pi's answer, do not.
fn solid_png(width: u32, height: u32) -> Vec<u8> {
    let image = image::RgbImage::from_pixel(width, height, image::Rgb([0x80; 3]));
    let mut bytes = Vec::new();
    image::DynamicImage::ImageRgb8(image)
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Png,
        )
        .expect("encode png");
    bytes
}

/// The photo record.mjs's `orientedJpeg` writes: a grey `width` x `height` JPEG with an EXIF
/// APP1 segment (big-endian TIFF, one orientation entry) right after SOI.
fn oriented_jpeg(width: u32, height: u32, orientation: u8) -> Vec<u8> {
    let image = image::RgbImage::from_pixel(width, height, image::Rgb([0x80; 3]));
    let mut jpeg = Vec::new();
    image::DynamicImage::ImageRgb8(image)
        .write_with_encoder(image::codecs::jpeg::JpegEncoder::new_with_quality(
            &mut jpeg, 90,
        ))
        .expect("encode jpeg");
    let tiff = [
        0x4d,
        0x4d,
        0,
        0x2a,
        0,
        0,
        0,
        8,
        0,
        1,
        0x01,
        0x12,
        0,
        3,
        0,
        0,
        0,
        1,
        0,
        orientation,
        0,
        0,
        0,
        0,
        0,
        0,
    ];
    let length = u16::try_from(2 + 6 + tiff.len()).expect("segment length");
    let mut out = jpeg[..2].to_vec();
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(b"Exif\0\0");
    out.extend_from_slice(&tiff);
    out.extend_from_slice(&jpeg[2..]);
    out
}

/// CRC-32 (IEEE), as PNG chunks and Node's `zlib.crc32` compute it.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn the_padded_png_is_a_valid_png() {
    let bytes = padded_png(4096);
    let image = image::load_from_memory(&bytes).expect("decodes");
    assert_eq!((image.width(), image.height()), (1, 1));
}

#[test]
fn format_size_prints_every_recorded_size_as_pi_does() {
    let recorded: Vec<(usize, String)> =
        serde_json::from_str(include_str!("pi-0.73.1/format-size.json")).expect("format-size.json");
    let differences: Vec<String> = recorded
        .iter()
        .filter(|(bytes, pi)| pi_coder::truncate::format_size(*bytes) != *pi)
        .map(|(bytes, pi)| {
            format!(
                "{bytes}: pi {pi}, ours {}",
                pi_coder::truncate::format_size(*bytes)
            )
        })
        .collect();
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}
