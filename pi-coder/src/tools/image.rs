//! Images for `read`: type detection by magic bytes and pi's resize-to-fit policy
//! (image-resize.ts: 2000x2000 and under 4.5 MiB of base64; PNG first, then JPEG at falling
//! quality, then smaller), measured after the EXIF orientation is applied.

use std::io::Cursor;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use image::codecs::jpeg::JpegEncoder;
use image::metadata::Orientation;
use image::{DynamicImage, ImageFormat, imageops::FilterType};

use crate::tools::exif;

/// Largest width or height sent to the model.
pub(crate) const MAX_DIMENSION: u32 = 2000;
/// A base64 payload must be smaller than this to be sent (pi's `DEFAULT_MAX_BYTES`,
/// `4.5 * 1024 * 1024`, compared with `<`: headroom below Anthropic's 5 MB limit).
pub(crate) const MAX_BASE64_BYTES: usize = 4_718_592;
/// JPEG qualities tried in order after PNG.
const JPEG_QUALITIES: [u8; 5] = [80, 85, 70, 55, 40];

/// The MIME type of an image pi's `read` supports, from the first bytes of the file.
pub(crate) fn sniff_mime(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// An image ready for the model.
#[derive(Debug)]
pub(crate) struct PreparedImage {
    /// Base64 data.
    pub(crate) data: String,
    /// MIME type of `data` (PNG or JPEG after a resize).
    pub(crate) mime_type: &'static str,
    /// `(original, displayed)` dimensions when the image was resized.
    pub(crate) resized: Option<((u32, u32), (u32, u32))>,
}

/// The original image if it fits, else a re-encoded smaller one; `None` when it cannot be
/// decoded or made to fit.
pub(crate) fn prepare(bytes: &[u8], mime_type: &'static str) -> Option<PreparedImage> {
    let format = match mime_type {
        "image/jpeg" => ImageFormat::Jpeg,
        "image/png" => ImageFormat::Png,
        "image/gif" => ImageFormat::Gif,
        _ => ImageFormat::WebP,
    };
    let mut decoded = image::load_from_memory_with_format(bytes, format).ok()?;
    // pi turns a photo upright before measuring it (the unchanged file keeps its EXIF tag).
    if let Some(orientation) = Orientation::from_exif(exif::orientation(bytes)) {
        decoded.apply_orientation(orientation);
    }
    let (width, height) = (decoded.width(), decoded.height());
    if width <= MAX_DIMENSION
        && height <= MAX_DIMENSION
        && base64_len(bytes.len()) < MAX_BASE64_BYTES
    {
        return Some(PreparedImage {
            data: STANDARD.encode(bytes),
            mime_type,
            resized: None,
        });
    }
    let (mut target_w, mut target_h) = fit(width, height, MAX_DIMENSION);
    loop {
        let resized = if (target_w, target_h) == (width, height) {
            None
        } else {
            Some(decoded.resize_exact(target_w, target_h, FilterType::Lanczos3))
        };
        if let Some((encoded, mime)) = encode_within_budget(resized.as_ref().unwrap_or(&decoded)) {
            return Some(PreparedImage {
                data: STANDARD.encode(encoded),
                mime_type: mime,
                resized: Some(((width, height), (target_w, target_h))),
            });
        }
        if target_w == 1 && target_h == 1 {
            return None;
        }
        target_w = ((f64::from(target_w) * 0.75) as u32).max(1);
        target_h = ((f64::from(target_h) * 0.75) as u32).max(1);
    }
}

/// `(w, h)` scaled down to fit `max` on both sides, keeping the aspect ratio, with pi's
/// arithmetic (image-resize.ts:98-105): the width first, then the height, each rounded half up.
/// A side pi would round to 0 is kept at 1.
fn fit(width: u32, height: u32, max: u32) -> (u32, u32) {
    let round = |value: f64| (value + 0.5).floor() as u32;
    let (mut w, mut h) = (width, height);
    if w > max {
        h = round(f64::from(h) * f64::from(max) / f64::from(w));
        w = max;
    }
    if h > max {
        w = round(f64::from(w) * f64::from(max) / f64::from(h));
        h = max;
    }
    (w.max(1), h.max(1))
}

fn encode_within_budget(image: &DynamicImage) -> Option<(Vec<u8>, &'static str)> {
    let mut png = Vec::new();
    if image
        .write_to(&mut Cursor::new(&mut png), ImageFormat::Png)
        .is_ok()
        && base64_len(png.len()) < MAX_BASE64_BYTES
    {
        return Some((png, "image/png"));
    }
    let rgb = DynamicImage::ImageRgb8(image.to_rgb8());
    for quality in JPEG_QUALITIES {
        let mut jpeg = Vec::new();
        if rgb
            .write_with_encoder(JpegEncoder::new_with_quality(&mut jpeg, quality))
            .is_ok()
            && base64_len(jpeg.len()) < MAX_BASE64_BYTES
        {
            return Some((jpeg, "image/jpeg"));
        }
    }
    None
}

fn base64_len(bytes: usize) -> usize {
    bytes.div_ceil(3) * 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_magic_bytes_not_extensions() {
        assert_eq!(sniff_mime(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
        assert_eq!(sniff_mime(b"\xFF\xD8\xFF\xE0"), Some("image/jpeg"));
        assert_eq!(sniff_mime(b"GIF89a.."), Some("image/gif"));
        assert_eq!(sniff_mime(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff_mime(b"hello"), None);
    }

    #[test]
    fn the_base64_limit_is_pis_strictly_below_4_5_mib() {
        // 3,538,941 bytes are 4,718,588 base64 bytes: sent as is. 3,538,942 are 4,718,592.
        assert!(base64_len(3_538_941) < MAX_BASE64_BYTES);
        assert!(base64_len(3_538_942) >= MAX_BASE64_BYTES);
        assert_eq!(MAX_BASE64_BYTES as f64, 4.5 * 1024.0 * 1024.0);
    }

    #[test]
    fn fits_keep_the_aspect_ratio() {
        // pi: 3000x2999 -> height round(2999 * 2000 / 3000) = round(1999.33) = 1999.
        assert_eq!(fit(3000, 2999, 2000), (2000, 1999));
        // pi: 2001x4000 -> 2000x3998 (width first), then round(2000 * 2000 / 3998) = 1001.
        assert_eq!(fit(2001, 4000, 2000), (1001, 2000));
        // pi: 4000x1001 -> round(1001 * 2000 / 4000) = round(500.5) = 501 (half up).
        assert_eq!(fit(4000, 1001, 2000), (2000, 501));
        assert_eq!(fit(4000, 1000, 2000), (2000, 500));
        assert_eq!(fit(100, 50, 2000), (100, 50));
        assert_eq!(fit(1, 100_000, 2000), (1, 2000));
    }
}
