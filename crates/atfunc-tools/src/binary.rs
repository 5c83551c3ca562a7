//! Binary results of the HTTP and command boxes: bytes a model cannot read go to the client
//! whole, as an element, and to the model as one line saying what they are.

use super::redact::{base64, Redactor, STANDARD};
use super::toolbox::CallContext;
use serde_json::{Map, Value as Json};

/// A result that is bytes rather than text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Binary {
    /// The element's `type`: `image`, `audio`, or `resource` for any other bytes.
    kind: &'static str,
    /// The media type, declared or recognised; `application/octet-stream` when neither.
    mime: String,
}

/// Media types recognised by their first bytes, for bytes that come without one.
const SIGNATURES: &[(&[u8], &str)] = &[
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"PK\x03\x04", "application/zip"),
    (b"\x1f\x8b", "application/gzip"),
    (b"OggS", "audio/ogg"),
    (b"fLaC", "audio/flac"),
    (b"ID3", "audio/mpeg"),
];

const OCTET_STREAM: &str = "application/octet-stream";

impl Binary {
    /// Whether `bytes`, declared as `media_type` (lower case, no parameters), are binary:
    /// an `image/`, `audio/` or `video/` type, or bytes that are not UTF-8 (whatever they
    /// are declared as). Empty bytes are not.
    pub(crate) fn of(media_type: Option<&str>, bytes: &[u8]) -> Option<Binary> {
        if bytes.is_empty() {
            return None;
        }
        let declared = media_type.filter(|m| !m.is_empty() && *m != OCTET_STREAM);
        let top = declared.and_then(|m| m.split('/').next());
        if !matches!(top, Some("image" | "audio" | "video")) && std::str::from_utf8(bytes).is_ok() {
            return None;
        }
        let mime = declared
            .or_else(|| {
                SIGNATURES
                    .iter()
                    .find(|(magic, _)| bytes.starts_with(magic))
                    .map(|(_, mime)| *mime)
            })
            .or_else(|| is_webp(bytes).then_some("image/webp"))
            .unwrap_or(OCTET_STREAM)
            .to_owned();
        let kind = match mime.split('/').next() {
            Some("image") => "image",
            Some("audio") => "audio",
            _ => "resource",
        };
        Some(Binary { kind, mime })
    }

    /// Adds the bytes to the call as an element and returns the model's line,
    /// `[image: image/png, 1234 bytes]`. Bytes that hold a secret are handed to no one: the
    /// line says they were withheld. `uri` names where a resource came from.
    pub(crate) fn hand_out(
        &self,
        bytes: &[u8],
        uri: Option<&str>,
        redactor: &Redactor,
        ctx: &CallContext,
    ) -> Json {
        let line = format!("[{}: {}, {} bytes", self.kind, self.mime, bytes.len());
        if redactor.holds_secret(bytes) {
            return Json::String(format!("{line}, withheld: it holds a secret]"));
        }
        let mut element = Map::new();
        element.insert("type".into(), Json::from(self.kind));
        if let (Some(uri), "resource") = (uri, self.kind) {
            element.insert("uri".into(), Json::from(uri));
        }
        element.insert("mime_type".into(), Json::from(self.mime.as_str()));
        element.insert("data".into(), Json::from(base64(bytes, STANDARD)));
        ctx.add_element(Json::Object(element));
        Json::String(format!("{line}]"))
    }
}

/// `RIFF`, a length, then `WEBP`.
fn is_webp(bytes: &[u8]) -> bool {
    bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(b"WEBP".as_slice())
}

/// The media type of a `Content-Type` value, lower case, without parameters.
#[cfg(feature = "http")]
pub(crate) fn media_type(value: &str) -> String {
    value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn base64_is_rfc_4648() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in vectors {
            assert_eq!(base64(plain.as_bytes(), STANDARD), encoded, "{plain}");
        }
        assert_eq!(base64(&[0xfb, 0xff], STANDARD), "+/8=");
    }

    fn kind_and_mime(media_type: Option<&str>, bytes: &[u8]) -> Option<(&'static str, String)> {
        Binary::of(media_type, bytes).map(|b| (b.kind, b.mime))
    }

    #[test]
    fn binary_bytes_are_told_from_text() {
        let png = Some("image/png");
        assert_eq!(
            kind_and_mime(png, b"\x89PNG"),
            Some(("image", "image/png".into()))
        );
        // A declared type wins over bytes that happen to be UTF-8.
        assert_eq!(
            kind_and_mime(Some("audio/ogg"), b"OggS"),
            Some(("audio", "audio/ogg".into()))
        );
        assert_eq!(
            kind_and_mime(Some("video/mp4"), b"ftyp"),
            Some(("resource", "video/mp4".into()))
        );
        assert_eq!(
            kind_and_mime(None, b"\xff\xfe"),
            Some(("resource", OCTET_STREAM.into()))
        );
        assert_eq!(kind_and_mime(Some("application/json"), b"{}"), None);
        assert_eq!(kind_and_mime(Some("text/plain"), "Straße".as_bytes()), None);
        assert_eq!(kind_and_mime(png, b""), None);
    }

    #[cfg(feature = "http")]
    #[test]
    fn a_content_type_is_read_as_its_media_type() {
        assert_eq!(media_type("Image/PNG; q=1"), "image/png");
        assert_eq!(media_type(" text/plain "), "text/plain");
    }

    #[test]
    fn undeclared_bytes_are_recognised_by_their_start() {
        let png = b"\x89PNG\r\n\x1a\n\0\0";
        for declared in [None, Some(OCTET_STREAM)] {
            assert_eq!(
                kind_and_mime(declared, png),
                Some(("image", "image/png".into()))
            );
        }
        assert_eq!(
            kind_and_mime(None, b"RIFF\x10\0\0\0WEBPVP8 \xff"),
            Some(("image", "image/webp".into()))
        );
        assert_eq!(
            kind_and_mime(None, b"%PDF-1.7\n\xe2\xe3\xcf\xd3"),
            Some(("resource", "application/pdf".into()))
        );
        // Text that starts like a signature is still text.
        assert_eq!(kind_and_mime(None, b"GIF89a is a format"), None);
    }

    #[test]
    fn bytes_go_to_the_client_unless_they_hold_a_secret() {
        let ctx = CallContext::new().collecting_elements();
        let nobody = Redactor::new(Vec::<String>::new());
        let blob = Binary::of(None, b"\0\xff").unwrap();
        assert_eq!(
            blob.hand_out(b"\0\xff", Some("https://h/x"), &nobody, &ctx),
            json!("[resource: application/octet-stream, 2 bytes]")
        );
        assert_eq!(
            ctx.take_elements(),
            [json!({"type": "resource", "uri": "https://h/x",
                    "mime_type": OCTET_STREAM, "data": "AP8="})]
        );
        let secret = Redactor::new(["hunter22"]);
        let bytes = b"\0\xffhunter22";
        assert_eq!(
            blob.hand_out(bytes, None, &secret, &ctx),
            json!("[resource: application/octet-stream, 10 bytes, withheld: it holds a secret]")
        );
        assert!(ctx.take_elements().is_empty());
    }
}
