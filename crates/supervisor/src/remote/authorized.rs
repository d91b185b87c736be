//! Where a remote server's token is sent: every request of a link goes through
//! [`Shared::authorized`], which puts the credential on it (a bearer token, or a DPoP-bound
//! token with a fresh proof), and turns the server's refusals into what sign-in can do about
//! them.

use reqwest::{Method, StatusCode};

use super::{Failure, Shared, header_text};
use auth::{Credential, Refusal, Unauthorized};

impl Shared {
    /// Runs `request` with the server's access token, if sign-in holds one; on a 401, once
    /// more with a fresh token. Without a token that works, the server needs a sign-in; so does
    /// a 403 for want of a scope a new sign-in can ask for.
    pub(super) async fn authorized<F, Fut>(&self, request: F) -> Result<reqwest::Response, Failure>
    where
        F: Fn(Option<Credential>) -> Fut,
        Fut: std::future::Future<Output = Result<reqwest::Response, Failure>>,
    {
        let credential = match &self.auth {
            Some(auth) => auth
                .token(&self.backend, &self.server)
                .await
                .map_err(|Unauthorized(message)| Failure::NeedsSignIn(message))?,
            None => None,
        };
        let sent = credential
            .as_ref()
            .map(|credential| credential.token().to_owned());
        let response = self.proven(&request, credential).await?;
        if response.status() != StatusCode::UNAUTHORIZED {
            return self.allowed(response).await;
        }
        let challenge = header_text(response.headers(), "www-authenticate");
        let Some(auth) = &self.auth else {
            return Err(Failure::NeedsSignIn(format!(
                "{} asks for a sign-in (HTTP 401), which this Switchboard cannot do",
                self.server.shown_url()
            )));
        };
        let fresh = auth
            .after_refusal(
                &self.backend,
                &self.server,
                sent.as_deref(),
                challenge.as_deref(),
            )
            .await
            .map_err(|Unauthorized(message)| Failure::NeedsSignIn(message))?;
        let response = self.proven(&request, Some(fresh)).await?;
        if response.status() == StatusCode::UNAUTHORIZED {
            let challenge = header_text(response.headers(), "www-authenticate");
            auth.forget_token(&self.backend, challenge.as_deref()).await;
            return Err(Failure::NeedsSignIn(format!(
                "{} refused a fresh token (HTTP 401); sign in to {} again",
                self.server.shown_url(),
                self.backend
            )));
        }
        self.allowed(response).await
    }

    /// Runs `request` with `credential`; when the server answers that a DPoP proof must carry
    /// its nonce (RFC 9449 §9), once more with a fresh proof that does.
    async fn proven<F, Fut>(
        &self,
        request: &F,
        credential: Option<Credential>,
    ) -> Result<reqwest::Response, Failure>
    where
        F: Fn(Option<Credential>) -> Fut,
        Fut: std::future::Future<Output = Result<reqwest::Response, Failure>>,
    {
        let response = request(credential.clone()).await?;
        let new_nonce = self.note_nonce(&response);
        let wants_nonce = response.status() == StatusCode::UNAUTHORIZED
            && header_text(response.headers(), "www-authenticate")
                .is_some_and(|challenge| challenge.contains("use_dpop_nonce"));
        if credential.is_some() && new_nonce && wants_nonce {
            let response = request(credential).await?;
            self.note_nonce(&response);
            return Ok(response);
        }
        Ok(response)
    }

    /// Keeps the DPoP nonce `response` gives, if any; whether it is a new one.
    fn note_nonce(&self, response: &reqwest::Response) -> bool {
        let Some(nonce) = header_text(response.headers(), "dpop-nonce") else {
            return false;
        };
        let mut kept = self.dpop_nonce.lock().expect("nonce lock");
        let new = kept.as_deref() != Some(nonce.as_str());
        *kept = Some(nonce);
        new
    }

    /// `response` unless it is a 403 for want of a scope, which sign-in turns into a sign-in
    /// for wider scopes or an error saying none can help.
    async fn allowed(&self, response: reqwest::Response) -> Result<reqwest::Response, Failure> {
        if response.status() != StatusCode::FORBIDDEN {
            return Ok(response);
        }
        let (Some(auth), Some(challenge)) = (
            &self.auth,
            header_text(response.headers(), "www-authenticate"),
        ) else {
            return Ok(response);
        };
        match auth
            .after_forbidden(&self.backend, &self.server, &challenge)
            .await
        {
            Some(Refusal::SignIn(message)) => Err(Failure::NeedsSignIn(message)),
            Some(Refusal::Final(message)) => Err(Failure::Error(message)),
            None => Ok(response),
        }
    }

    /// A request to `url` with the server's configured headers and the access token.
    pub(super) fn request(
        &self,
        method: Method,
        url: reqwest::Url,
        credential: Option<&Credential>,
    ) -> reqwest::RequestBuilder {
        let mut request = self.client.request(method.clone(), url.clone());
        for (name, value) in &self.server.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        if let Some(credential) = credential {
            let nonce = self.dpop_nonce.lock().expect("nonce lock").clone();
            request = credential.authorize(request, &method, &url, nonce.as_deref());
        }
        request
    }
}
