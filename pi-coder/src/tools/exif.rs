//! The EXIF orientation of a JPEG or WebP file, read the way pi reads it (exif-orientation.ts),
//! so `read` measures and resizes a photo upright, as pi does. Every read is bounds-checked: a
//! truncated or hostile header means "no orientation", never a panic or a loop.

/// EXIF tag of the orientation entry.
const ORIENTATION_TAG: u16 = 0x0112;

/// The EXIF orientation (1 to 8) of a JPEG or WebP image: 1 when there is none, or it is out of
/// range or unreadable. Other formats are not looked at (as in pi).
pub(crate) fn orientation(bytes: &[u8]) -> u8 {
    let tiff = if bytes.starts_with(&[0xFF, 0xD8]) {
        jpeg_tiff_offset(bytes)
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        webp_tiff_offset(bytes)
    } else {
        None
    };
    tiff.and_then(|start| orientation_in_tiff(bytes, start))
        .unwrap_or(1)
}

/// pi's `findJpegTiffOffset`: the TIFF header of the first APP1 segment, if that segment is EXIF.
fn jpeg_tiff_offset(bytes: &[u8]) -> Option<usize> {
    let mut offset = 2;
    while offset + 1 < bytes.len() {
        if bytes[offset] != 0xFF {
            return None;
        }
        let marker = bytes[offset + 1];
        if marker == 0xFF {
            offset += 1;
            continue;
        }
        if marker == 0xE1 {
            let segment = offset + 4;
            return has_exif_header(bytes, segment).then_some(segment + 6);
        }
        let length = usize::from(u16::from_be_bytes([
            *bytes.get(offset + 2)?,
            *bytes.get(offset + 3)?,
        ]));
        offset += 2 + length;
    }
    None
}

/// pi's `findWebpTiffOffset`: the TIFF header inside the `EXIF` chunk (after an optional
/// `Exif\0\0` prefix).
fn webp_tiff_offset(bytes: &[u8]) -> Option<usize> {
    let mut offset = 12usize;
    while offset + 8 <= bytes.len() {
        let size = u32::from_le_bytes(bytes[offset + 4..offset + 8].try_into().ok()?);
        let size = usize::try_from(size).ok()?;
        let data = offset + 8;
        if &bytes[offset..offset + 4] == b"EXIF" {
            if data.checked_add(size)? > bytes.len() {
                return None;
            }
            let prefixed = size >= 6 && has_exif_header(bytes, data);
            return Some(if prefixed { data + 6 } else { data });
        }
        // RIFF chunks are padded to an even size.
        offset = data.checked_add(size)?.checked_add(size % 2)?;
    }
    None
}

/// `Exif\0\0` at `offset`.
fn has_exif_header(bytes: &[u8], offset: usize) -> bool {
    bytes.get(offset..offset + 6) == Some(b"Exif\0\0".as_slice())
}

/// pi's `readOrientationFromTiff`: the orientation entry of the first IFD.
fn orientation_in_tiff(bytes: &[u8], start: usize) -> Option<u8> {
    let header = bytes.get(start..start.checked_add(8)?)?;
    let little_endian = header[..2] == *b"II";
    let read16 = |at: usize| -> Option<u16> {
        let pair = [*bytes.get(at)?, *bytes.get(at.checked_add(1)?)?];
        Some(if little_endian {
            u16::from_le_bytes(pair)
        } else {
            u16::from_be_bytes(pair)
        })
    };
    let ifd_offset: [u8; 4] = header[4..8].try_into().ok()?;
    let ifd_offset = if little_endian {
        u32::from_le_bytes(ifd_offset)
    } else {
        u32::from_be_bytes(ifd_offset)
    };
    let ifd = start.checked_add(usize::try_from(ifd_offset).ok()?)?;
    let entries = read16(ifd)?;
    for index in 0..usize::from(entries) {
        let entry = ifd + 2 + index * 12;
        if entry + 12 > bytes.len() {
            return None;
        }
        if read16(entry)? == ORIENTATION_TAG {
            let value = read16(entry + 8)?;
            return u8::try_from(value).ok().filter(|v| (1..=8).contains(v));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An APP1 EXIF segment whose first IFD holds one orientation entry.
    fn app1(value: u16, little_endian: bool) -> Vec<u8> {
        let mut tiff = Vec::new();
        if little_endian {
            tiff.extend_from_slice(
                b"II\x2a\x00\x08\x00\x00\x00\x01\x00\x12\x01\x03\x00\x01\x00\x00\x00",
            );
            tiff.extend_from_slice(&value.to_le_bytes());
        } else {
            tiff.extend_from_slice(
                b"MM\x00\x2a\x00\x00\x00\x08\x00\x01\x01\x12\x00\x03\x00\x00\x00\x01",
            );
            tiff.extend_from_slice(&value.to_be_bytes());
        }
        tiff.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        let length = u16::try_from(2 + 6 + tiff.len()).unwrap();
        let mut segment = vec![0xFF, 0xE1];
        segment.extend_from_slice(&length.to_be_bytes());
        segment.extend_from_slice(b"Exif\0\0");
        segment.extend_from_slice(&tiff);
        segment
    }

    fn jpeg_with(segments: &[&[u8]]) -> Vec<u8> {
        let mut bytes = vec![0xFF, 0xD8];
        for segment in segments {
            bytes.extend_from_slice(segment);
        }
        bytes.extend_from_slice(&[0xFF, 0xDA, 0x00, 0x02, 0x12, 0x34]);
        bytes
    }

    #[test]
    fn reads_the_orientation_of_a_jpeg_in_either_byte_order() {
        for value in 1..=8 {
            assert_eq!(orientation(&jpeg_with(&[&app1(value, false)])), value as u8);
            assert_eq!(orientation(&jpeg_with(&[&app1(value, true)])), value as u8);
        }
        let jfif = [0xFF, 0xE0, 0x00, 0x04, 0x4A, 0x46];
        assert_eq!(orientation(&jpeg_with(&[&jfif, &app1(6, false)])), 6);
    }

    #[test]
    fn out_of_range_missing_and_broken_headers_mean_no_orientation() {
        assert_eq!(orientation(&jpeg_with(&[&app1(9, false)])), 1);
        assert_eq!(orientation(&jpeg_with(&[&app1(0, false)])), 1);
        assert_eq!(orientation(&jpeg_with(&[])), 1);
        assert_eq!(orientation(b"\x89PNG\r\n\x1a\n"), 1);
        let full = jpeg_with(&[&app1(6, false)]);
        for cut in 0..full.len() {
            assert!((1..=8).contains(&orientation(&full[..cut])));
        }
        // An IFD offset far past the end, and a WebP chunk size that would wrap.
        let mut far = app1(6, true);
        far[14..18].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(orientation(&jpeg_with(&[&far])), 1);
        let mut webp = b"RIFF\0\0\0\0WEBPVP8 ".to_vec();
        webp.extend_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(orientation(&webp), 1);
    }

    #[test]
    fn reads_the_orientation_of_a_webp_exif_chunk() {
        let segment = app1(8, true);
        let exif = &segment[4..]; // "Exif\0\0" + TIFF
        let mut webp = b"RIFF\0\0\0\0WEBP".to_vec();
        webp.extend_from_slice(b"VP8 \x03\x00\x00\x00abc\x00");
        webp.extend_from_slice(b"EXIF");
        webp.extend_from_slice(&u32::try_from(exif.len()).unwrap().to_le_bytes());
        webp.extend_from_slice(exif);
        assert_eq!(orientation(&webp), 8);
    }
}
