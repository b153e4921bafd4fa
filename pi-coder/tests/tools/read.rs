use base64::Engine;
use serde_json::json;

use crate::{call, confined_project, err_text, ok_text, project, write_file};

#[tokio::test]
async fn offset_and_limit_give_pis_continuation_notice() {
    let (dir, tools) = project();
    write_file(dir.path(), "a.txt", "line1\nline2\nline3\n");
    let result = call(
        &tools,
        "read",
        json!({"path": "a.txt", "offset": 2, "limit": 1}),
    )
    .await;
    assert_eq!(
        ok_text(&result),
        "line2\n\n[2 more lines in file. Use offset=3 to continue.]"
    );
    assert_eq!(result.details, serde_json::Value::Null);
    let whole = call(&tools, "read", json!({"path": "@a.txt"})).await;
    assert_eq!(ok_text(&whole), "line1\nline2\nline3\n");
}

#[tokio::test]
async fn offset_beyond_the_end_is_an_error() {
    let (dir, tools) = project();
    write_file(dir.path(), "a.txt", "line1\nline2\nline3\n");
    let result = call(&tools, "read", json!({"path": "a.txt", "offset": 10})).await;
    assert_eq!(
        err_text(&result),
        "Offset 10 is beyond end of file (4 lines total)"
    );
}

#[tokio::test]
async fn limit_zero_answers_with_the_continuation_notice_like_pi() {
    let (dir, tools) = project();
    write_file(dir.path(), "a.txt", "line1\nline2\nline3\n");
    // pi (read.ts:293-322): no lines selected, then `[N more lines in file. ...]`.
    let result = call(&tools, "read", json!({"path": "a.txt", "limit": 0})).await;
    assert_eq!(
        ok_text(&result),
        "\n\n[4 more lines in file. Use offset=1 to continue.]"
    );
    let result = call(
        &tools,
        "read",
        json!({"path": "a.txt", "offset": 3, "limit": 0}),
    )
    .await;
    assert_eq!(
        ok_text(&result),
        "\n\n[2 more lines in file. Use offset=3 to continue.]"
    );
    // A negative limit makes pi slice from the end; we refuse it with a clear message.
    let result = call(&tools, "read", json!({"path": "a.txt", "limit": -1})).await;
    assert_eq!(err_text(&result), "limit must be at least 0 (got -1)");
}

#[tokio::test]
async fn long_files_stop_at_2000_lines() {
    let (dir, tools) = project();
    let text: Vec<String> = (1..=2500).map(|i| format!("{i}")).collect();
    write_file(dir.path(), "long.txt", text.join("\n"));
    let result = call(&tools, "read", json!({"path": "long.txt"})).await;
    let out = ok_text(&result);
    assert!(out.starts_with("1\n2\n"));
    assert!(
        out.ends_with("2000\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]"),
        "{out}"
    );
    assert_eq!(result.details["truncation"]["truncatedBy"], "lines");
    let next = call(&tools, "read", json!({"path": "long.txt", "offset": 2001})).await;
    assert!(ok_text(&next).starts_with("2001\n") && ok_text(&next).ends_with("2500"));
}

#[tokio::test]
async fn wide_files_stop_at_50kb() {
    let (dir, tools) = project();
    let line = "x".repeat(99);
    let text: Vec<&str> = (0..1000).map(|_| line.as_str()).collect();
    write_file(dir.path(), "wide.txt", text.join("\n"));
    let out = ok_text(&call(&tools, "read", json!({"path": "wide.txt"})).await);
    assert!(
        out.ends_with(
            "\n\n[Showing lines 1-512 of 1000 (50.0KB limit). Use offset=513 to continue.]"
        ),
        "{}",
        &out[out.len() - 100..]
    );
}

#[tokio::test]
async fn a_first_line_over_50kb_points_to_sed() {
    let (dir, tools) = project();
    write_file(
        dir.path(),
        "huge.txt",
        format!("{}\nshort", "y".repeat(60 * 1024)),
    );
    let out = ok_text(&call(&tools, "read", json!({"path": "huge.txt"})).await);
    assert_eq!(
        out,
        "[Line 1 is 60.0KB, exceeds 50.0KB limit. Use bash: sed -n '1p' huge.txt | head -c 51200]"
    );
}

#[tokio::test]
async fn missing_files_directories_and_binaries_are_errors() {
    let (dir, tools) = project();
    let missing = dir.path().join("nope.txt");
    let result = call(&tools, "read", json!({"path": "nope.txt"})).await;
    assert_eq!(
        err_text(&result),
        format!(
            "ENOENT: no such file or directory, access '{}'",
            missing.display()
        )
    );
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let result = call(&tools, "read", json!({"path": "sub"})).await;
    assert_eq!(
        err_text(&result),
        "EISDIR: illegal operation on a directory, read"
    );
    write_file(dir.path(), "blob.bin", [0u8, 159, 146, 150, 0, 1, 2, 3]);
    let result = call(&tools, "read", json!({"path": "blob.bin"})).await;
    assert!(
        err_text(&result).starts_with("Cannot read blob.bin: it is a binary file (8B)"),
        "{}",
        result.text_content()
    );
    let result = call(&tools, "read", json!({"offset": 1})).await;
    assert!(err_text(&result).starts_with("Validation failed for tool \"read\""));
}

fn png(width: u32, height: u32) -> Vec<u8> {
    let image = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, 7])
    });
    let mut bytes = Vec::new();
    image::DynamicImage::ImageRgb8(image)
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Png,
        )
        .unwrap();
    bytes
}

#[tokio::test]
async fn images_are_detected_by_magic_bytes_and_sent_as_attachments() {
    let (dir, tools) = project();
    let bytes = png(4, 3);
    write_file(dir.path(), "picture.txt", &bytes);
    let result = call(&tools, "read", json!({"path": "picture.txt"})).await;
    assert!(!result.is_error);
    assert_eq!(
        result.content[0],
        pi_tool::Content::text("Read image file [image/png]")
    );
    let pi_tool::Content::Image { data, mime_type } = &result.content[1] else {
        panic!("no image block")
    };
    assert_eq!(mime_type, "image/png");
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap(),
        bytes
    );
}

#[tokio::test]
async fn large_images_are_resized_with_a_coordinate_note() {
    let (dir, tools) = project();
    write_file(dir.path(), "wide.png", png(3000, 1500));
    let result = call(&tools, "read", json!({"path": "wide.png"})).await;
    assert_eq!(
        ok_text(&result),
        "Read image file [image/png]\n[Image: original 3000x1500, displayed at 2000x1000. Multiply coordinates by 1.50 to map to original image.]"
    );
    let pi_tool::Content::Image { data, .. } = &result.content[1] else {
        panic!("no image block")
    };
    let decoded = image::load_from_memory(
        &base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap(),
    )
    .unwrap();
    assert_eq!((decoded.width(), decoded.height()), (2000, 1000));
}

#[tokio::test]
async fn a_corrupt_image_is_omitted_with_pis_note() {
    let (dir, tools) = project();
    write_file(
        dir.path(),
        "broken.png",
        b"\x89PNG\r\n\x1a\nthis is not really a png",
    );
    let result = call(&tools, "read", json!({"path": "broken.png"})).await;
    assert_eq!(
        ok_text(&result),
        "Read image file [image/png]\n[Image omitted: could not be resized below the inline image size limit.]"
    );
}

#[tokio::test]
async fn confinement_blocks_escapes_by_dots_absolute_paths_and_symlinks() {
    let (dir, tools) = confined_project();
    let outside = tempfile::tempdir().unwrap();
    write_file(outside.path(), "secret.txt", "secret");
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        dir.path().join("link.txt"),
    )
    .unwrap();
    for path in [
        "../x.txt".to_owned(),
        outside.path().join("secret.txt").display().to_string(),
        "link.txt".to_owned(),
    ] {
        let result = call(&tools, "read", json!({"path": path})).await;
        assert!(
            err_text(&result).contains("is outside the working directory"),
            "{path}: {}",
            result.text_content()
        );
    }
    write_file(dir.path(), "inside.txt", "ok");
    std::os::unix::fs::symlink(
        dir.path().join("inside.txt"),
        dir.path().join("good-link.txt"),
    )
    .unwrap();
    assert_eq!(
        ok_text(&call(&tools, "read", json!({"path": "good-link.txt"})).await),
        "ok"
    );
}

#[tokio::test]
async fn a_symlink_loop_is_an_error_not_a_hang() {
    let (dir, tools) = project();
    std::os::unix::fs::symlink(dir.path().join("loop-b"), dir.path().join("loop-a")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("loop-a"), dir.path().join("loop-b")).unwrap();
    let result = call(&tools, "read", json!({"path": "loop-a"})).await;
    assert!(
        err_text(&result).starts_with("ELOOP: "),
        "{}",
        result.text_content()
    );
    let (dir, tools) = confined_project();
    std::os::unix::fs::symlink(dir.path().join("loop-b"), dir.path().join("loop-a")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("loop-a"), dir.path().join("loop-b")).unwrap();
    let result = call(&tools, "read", json!({"path": "loop-a"})).await;
    assert!(
        err_text(&result).starts_with("ELOOP: "),
        "{}",
        result.text_content()
    );
}

#[tokio::test]
async fn an_image_too_heavy_for_the_budget_becomes_a_smaller_jpeg() {
    let (dir, tools) = project();
    // 1500x1500 of noise: small enough in pixels, but its PNG is ~6.8 MB, over 4.5 MiB of base64.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let noise = image::RgbImage::from_fn(1500, 1500, |_, _| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        image::Rgb([state as u8, (state >> 8) as u8, (state >> 16) as u8])
    });
    let mut bytes = Vec::new();
    image::DynamicImage::ImageRgb8(noise)
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Png,
        )
        .unwrap();
    assert!(bytes.len() > 4_718_592);
    write_file(dir.path(), "noise.png", &bytes);
    let result = call(&tools, "read", json!({"path": "noise.png"})).await;
    let text = ok_text(&result);
    assert!(
        text.starts_with("Read image file [image/jpeg]\n[Image: original 1500x1500, displayed at "),
        "{text}"
    );
    let pi_tool::Content::Image { data, mime_type } = &result.content[1] else {
        panic!("no image block")
    };
    assert_eq!(mime_type, "image/jpeg");
    // pi sends base64 strictly under 4.5 MiB (image-resize.ts:23).
    assert!(data.len() < 4_718_592, "{} bytes of base64", data.len());
}

#[tokio::test]
async fn big_files_are_counted_whole_but_read_in_bounded_pieces() {
    let (dir, tools) = project();
    let text: String = (1..=300_000).map(|i| format!("{i}\n")).collect();
    write_file(dir.path(), "big.log", &text);
    let result = call(
        &tools,
        "read",
        json!({"path": "big.log", "offset": 250_000, "limit": 2}),
    )
    .await;
    assert_eq!(
        ok_text(&result),
        "250000\n250001\n\n[50000 more lines in file. Use offset=250002 to continue.]"
    );
    let result = call(&tools, "read", json!({"path": "big.log"})).await;
    assert!(
        ok_text(&result)
            .ends_with("2000\n\n[Showing lines 1-2000 of 300001. Use offset=2001 to continue.]")
    );
    assert_eq!(result.details["truncation"]["totalLines"], 300_001);
    assert_eq!(result.details["truncation"]["totalBytes"], text.len());
}

#[tokio::test]
async fn macos_spellings_of_a_name_are_found() {
    let (dir, tools) = project();
    write_file(
        dir.path(),
        "Screenshot 2025-01-01 at 9.41.07\u{202F}AM.txt",
        "shot",
    );
    write_file(dir.path(), "it\u{2019}s.txt", "curly");
    write_file(dir.path(), "cafe\u{301}.txt", "decomposed");
    let result = call(
        &tools,
        "read",
        json!({"path": "Screenshot 2025-01-01 at 9.41.07 AM.txt"}),
    )
    .await;
    assert_eq!(ok_text(&result), "shot");
    assert_eq!(
        ok_text(&call(&tools, "read", json!({"path": "it's.txt"})).await),
        "curly"
    );
    assert_eq!(
        ok_text(&call(&tools, "read", json!({"path": "caf\u{e9}.txt"})).await),
        "decomposed"
    );
}
