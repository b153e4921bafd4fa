//! DPoP (RFC 9449): proofs of possession of a key pair the client makes for one connection. Each
//! token request and each request to the MCP server carries a fresh proof (a JWT of type
//! `dpop+jwt` signed with the private key, the public key in its header) naming the method, the
//! URL, the time, and for the MCP server the hash of the access token; a token the authorization
//! server binds to the key (`cnf.jkt`) is useless to whoever steals it without the key.
//!
//! Signing is jsonwebtoken's (ES256 on RustCrypto's p256), the key pair p256's.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::pkcs8::EncodePrivateKey as _;
use sha2::{Digest as _, Sha256};
use url::Url;

use super::jwt_bearer::now_secs;

/// The header a proof travels in, and the one servers send nonces in.
pub(crate) const DPOP_HEADER: &str = "DPoP";
pub(crate) const DPOP_NONCE_HEADER: &str = "DPoP-Nonce";

/// One connection's DPoP key pair, and the nonces its servers asked for.
pub(crate) struct DpopKey {
    signing: EncodingKey,
    public: Jwk,
    /// The last nonce each server (by origin) gave.
    nonces: Mutex<HashMap<String, String>>,
    /// Whether the last token the authorization server issued is bound to this key (its
    /// `token_type` was `DPoP`); a server without DPoP issues bearer tokens.
    bound: AtomicBool,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopKey").finish_non_exhaustive()
    }
}

impl DpopKey {
    /// A fresh P-256 key pair from the OS random source.
    pub(crate) fn generate() -> Result<Self, String> {
        let secret = loop {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes)
                .map_err(|err| format!("no randomness for a DPoP key: {err}"))?;
            // Out of range (about 2^-32 of the draws): draw again.
            if let Ok(secret) = p256::SecretKey::from_slice(&bytes) {
                break secret;
            }
        };
        let der = secret
            .to_pkcs8_der()
            .map_err(|err| format!("cannot encode the DPoP key: {err}"))?;
        let signing = EncodingKey::from_ec_der(der.as_bytes());
        let public = Jwk::from_encoding_key(&signing, Algorithm::ES256)
            .map_err(|err| format!("cannot describe the DPoP key: {err}"))?;
        Ok(DpopKey {
            signing,
            public,
            nonces: Mutex::default(),
            bound: AtomicBool::new(false),
        })
    }

    /// A proof for one request: `method` to `url` (its query and fragment left out), with the
    /// hash of `access_token` for a resource server, and the server's last nonce if it gave one.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
    ) -> Result<String, String> {
        let mut target =
            Url::parse(url).map_err(|err| format!("{url} is not a URL for a DPoP proof: {err}"))?;
        target.set_query(None);
        target.set_fragment(None);
        let mut claims = serde_json::json!({
            "jti": fresh_id()?,
            "htm": method,
            "htu": target.as_str(),
            "iat": now_secs(),
        });
        if let Some(token) = access_token {
            claims["ath"] = URL_SAFE_NO_PAD
                .encode(Sha256::digest(token.as_bytes()))
                .into();
        }
        if let Some(nonce) = self.nonce_for(&target) {
            claims["nonce"] = nonce.into();
        }
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("dpop+jwt".to_owned());
        header.jwk = Some(self.public.clone());
        jsonwebtoken::encode(&header, &claims, &self.signing)
            .map_err(|err| format!("cannot sign the DPoP proof: {err}"))
    }

    /// Keeps a nonce a server at `url` sent (in a `DPoP-Nonce` header) for the next proofs to
    /// it. Returns whether it is new: a nonce asked for again is not worth another try.
    pub(crate) fn remember_nonce(&self, url: &str, nonce: &str) -> bool {
        let Ok(url) = Url::parse(url) else {
            return false;
        };
        // A nonce is opaque but must fit a JWT claim and a header: printable ASCII, bounded.
        if nonce.is_empty()
            || nonce.len() > 1024
            || !nonce.bytes().all(|b| (0x21..0x7f).contains(&b))
        {
            return false;
        }
        let origin = url.origin().ascii_serialization();
        let mut nonces = self
            .nonces
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        nonces.insert(origin, nonce.to_owned()).as_deref() != Some(nonce)
    }

    fn nonce_for(&self, url: &Url) -> Option<String> {
        self.nonces
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&url.origin().ascii_serialization())
            .cloned()
    }

    /// Records the `token_type` of a token response.
    pub(crate) fn set_bound(&self, bound: bool) {
        self.bound.store(bound, Ordering::Release);
    }

    /// Whether the current token is to be presented with `Authorization: DPoP`.
    pub(crate) fn is_bound(&self) -> bool {
        self.bound.load(Ordering::Acquire)
    }
}

/// 16 random bytes, base64url: the proof's `jti`, never repeated.
fn fresh_id() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|err| format!("no randomness for a DPoP proof: {err}"))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// Whether an answer is a demand for a nonce: a token endpoint's 400 or a resource server's
/// 401 whose error (in the body's `error` or the `WWW-Authenticate` challenge) is
/// `use_dpop_nonce`.
pub(crate) fn asks_for_nonce(text: &str) -> bool {
    text.contains("use_dpop_nonce")
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{DecodingKey, Validation};

    fn decode(proof: &str) -> (serde_json::Value, serde_json::Value) {
        let header = jsonwebtoken::decode_header(proof).unwrap();
        assert_eq!(header.typ.as_deref(), Some("dpop+jwt"));
        let jwk = header.jwk.expect("the public key is in the header");
        let key = DecodingKey::from_jwk(&jwk).unwrap();
        let mut validation = Validation::new(Algorithm::ES256);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        let claims = jsonwebtoken::decode::<serde_json::Value>(proof, &key, &validation)
            .expect("the proof verifies with the key in its header")
            .claims;
        let jwk = serde_json::to_value(&jwk).unwrap();
        (jwk, claims)
    }

    #[test]
    fn a_proof_names_the_request_and_hashes_the_token() {
        let key = DpopKey::generate().unwrap();
        let proof = key
            .proof("POST", "https://mcp.example/mcp?x=1#f", Some("the-token"))
            .unwrap();
        let (jwk, claims) = decode(&proof);
        assert_eq!(jwk["kty"], "EC");
        assert_eq!(jwk["crv"], "P-256");
        assert!(jwk.get("d").is_none(), "no private part: {jwk}");
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example/mcp");
        assert_eq!(
            claims["ath"],
            URL_SAFE_NO_PAD.encode(Sha256::digest(b"the-token"))
        );
        assert!(claims.get("nonce").is_none());
        let again = key.proof("POST", "https://mcp.example/mcp", None).unwrap();
        let (_, second) = decode(&again);
        assert_ne!(claims["jti"], second["jti"], "each proof is fresh");
        assert!(second.get("ath").is_none());
    }

    #[test]
    fn a_nonce_goes_to_its_own_server_only_and_bad_ones_are_refused() {
        let key = DpopKey::generate().unwrap();
        assert!(key.remember_nonce("https://as.example/token", "n-1"));
        assert!(
            !key.remember_nonce("https://as.example/other", "n-1"),
            "not new"
        );
        let (_, to_as) = decode(&key.proof("POST", "https://as.example/token", None).unwrap());
        assert_eq!(to_as["nonce"], "n-1");
        let (_, to_rs) = decode(&key.proof("POST", "https://mcp.example/mcp", None).unwrap());
        assert!(to_rs.get("nonce").is_none(), "{to_rs}");
        for bad in ["", "with space", "line\nbreak", &"x".repeat(1025)] {
            assert!(
                !key.remember_nonce("https://mcp.example/mcp", bad),
                "{bad:?}"
            );
        }
        let (_, still) = decode(&key.proof("GET", "https://mcp.example/mcp", None).unwrap());
        assert!(still.get("nonce").is_none(), "{still}");
    }

    #[test]
    fn the_key_is_not_in_debug_output() {
        let key = DpopKey::generate().unwrap();
        assert_eq!(format!("{key:?}"), "DpopKey { .. }");
    }
}
