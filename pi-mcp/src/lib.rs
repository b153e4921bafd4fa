#![doc = include_str!("../README.md")]

mod client;
mod server;

pub use client::{
    AssertionSource, AuthorizationPrompt, AuthorizationReason, AuthorizeError, Authorizer,
    CredentialStore, CredentialStoreError, DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_SIGN_IN_TIMEOUT, ElicitationHandler, ElicitationKind, ElicitationRequest,
    ElicitationResponse, FileCredentialStore, IdentityProvider, InMemoryCredentialStore,
    LoopbackAuthorizer, McpClient, McpClientBuilder, McpClientError, McpConfig, McpConfigError,
    McpOAuthSettings, McpServerConfig, McpTool, McpToolList, OAuthConfig, OAuthCredentials,
    SigningAlgorithm, TokenFile,
};
pub use server::{
    AuthConfigError, DEFAULT_MAX_REQUEST_BODY_BYTES, HttpLimits, McpServer, ProtectedResource,
    ServeError, TokenError, TokenVerifier, VerifiedToken, generate_token,
};
#[cfg(feature = "jwt")]
pub use server::{
    DEFAULT_LEEWAY, DEFAULT_MAX_KEY_AGE, DEFAULT_REFRESH_INTERVAL, JwtVerifier, JwtVerifierBuilder,
};
