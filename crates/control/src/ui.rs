//! The dashboard's files (`ui/`): embedded in the binary, or read from a directory on every
//! request while developing (`serve --ui-dir ui`), so that an edit shows on reload.
//!
//! [`router`] serves them from the root: `/` is `index.html`, `/app.js` is `ui/app.js`, and so
//! on. It only serves files; the control API puts it behind its guard and token
//! (`ApiState::with_ui`). Every answer carries the dashboard's Content Security Policy (nothing
//! inline, nothing from elsewhere, no framing) and `Cache-Control: no-cache` with an `ETag`, so a
//! new build's files are never mixed with cached old ones.
//!
//! The embedded set is the list [`EMBEDDED`]; a test checks it against the directory, so a file
//! added to `ui/` and not listed fails the tests rather than going missing from the binary.
//! `ui/tsconfig.json` (type checking only) is never embedded.

use std::hash::{Hash, Hasher};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

/// What the dashboard's pages may load and do.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; connect-src 'self'; \
     img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'";

/// `(path, contents)` of each file below `ui/`, read at build time.
macro_rules! embed {
    ($($path:literal),* $(,)?) => {
        &[$((
            $path,
            include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../ui/", $path)) as &[u8],
        )),*]
    };
}

/// Every served file of `ui/`, by its path below `ui/`.
const EMBEDDED: &[(&str, &[u8])] = embed![
    "index.html",
    "style.css",
    "icon.svg",
    "app.js",
    "api.js",
    "dom.js",
    "events.js",
    "format.js",
    "session.js",
    "store.js",
    "types.js",
    "views/activity.js",
    "views/add.js",
    "views/approvals.js",
    "views/questions.js",
    "views/attention.js",
    "views/backend.js",
    "views/backends.js",
    "views/banner.js",
    "views/common.js",
    "views/connect.js",
    "views/history.js",
    "views/moving.js",
    "views/output.js",
    "views/profiles.js",
    "views/review.js",
    "views/schema.js",
    "views/secrets.js",
    "views/tools.js",
    "views/tryit.js",
    "views/welcome.js",
];

/// The dashboard's files: embedded, or from `dir` (read on every request) when given.
pub fn router(dir: Option<PathBuf>) -> Router {
    if let Some(dir) = &dir {
        if dir.join("index.html").is_file() {
            tracing::info!(dir = %dir.display(), "serving the dashboard's files from disk");
        } else {
            tracing::warn!(dir = %dir.display(), "no index.html there: the dashboard will not load");
        }
    }
    Router::new()
        .fallback(serve_file)
        .with_state(Arc::new(Files { dir }))
}

struct Files {
    dir: Option<PathBuf>,
}

async fn serve_file(
    State(files): State<Arc<Files>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    if method != Method::GET && method != Method::HEAD {
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD");
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let Some(relative) = file_path(uri.path()) else {
        return plain(StatusCode::NOT_FOUND, "no such file");
    };
    let Some(content_type) = content_type(relative) else {
        return plain(StatusCode::NOT_FOUND, "no such file");
    };
    let bytes = match &files.dir {
        None => EMBEDDED
            .iter()
            .find(|(path, _)| *path == relative)
            .map(|(_, bytes)| bytes.to_vec()),
        Some(dir) => read_from(dir, relative).await,
    };
    let Some(bytes) = bytes else {
        return plain(StatusCode::NOT_FOUND, "no such file");
    };

    let etag = etag(&bytes);
    let fresh = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|candidate| candidate.trim() == etag || candidate.trim() == "*");
    let (status, body) = if fresh {
        (StatusCode::NOT_MODIFIED, Body::empty())
    } else if method == Method::HEAD {
        (StatusCode::OK, Body::empty())
    } else {
        (StatusCode::OK, Body::from(bytes))
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::ETAG,
        HeaderValue::from_str(&etag).expect("an ETag is quoted hex"),
    );
    add_common_headers(headers);
    response
}

/// The path below `ui/` that a request path names, or `None` when it names nothing servable:
/// an empty, `.`, `..` or hidden segment, a backslash, or a directory.
fn file_path(request_path: &str) -> Option<&str> {
    let relative = request_path.strip_prefix('/')?;
    if relative.is_empty() {
        return Some("index.html");
    }
    let plain_segments = relative
        .split('/')
        .all(|segment| !segment.is_empty() && !segment.starts_with('.') && !segment.contains('\\'));
    plain_segments.then_some(relative)
}

/// The content type of a file the dashboard may consist of; other files are not served.
fn content_type(path: &str) -> Option<&'static str> {
    let extension = path.rsplit_once('.')?.1;
    let content_type = match extension {
        "html" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        _ => return None,
    };
    Some(content_type)
}

/// Reads `relative` below `dir`, refusing anything that resolves outside it (a symlink, say).
async fn read_from(dir: &Path, relative: &str) -> Option<Vec<u8>> {
    let candidate = dir.join(relative);
    debug_assert!(
        Path::new(relative)
            .components()
            .all(|component| matches!(component, Component::Normal(_)))
    );
    let root = tokio::fs::canonicalize(dir).await.ok()?;
    let resolved = tokio::fs::canonicalize(&candidate).await.ok()?;
    if !resolved.starts_with(&root) || !tokio::fs::metadata(&resolved).await.ok()?.is_file() {
        return None;
    }
    tokio::fs::read(&resolved).await.ok()
}

/// A strong validator of the content: its hash, quoted.
fn etag(bytes: &[u8]) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    format!("\"{:016x}-{:x}\"", hasher.finish(), bytes.len())
}

fn add_common_headers(headers: &mut HeaderMap) {
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
}

fn plain(status: StatusCode, message: &'static str) -> Response {
    let mut response = (status, message).into_response();
    add_common_headers(response.headers_mut());
    response
}

#[cfg(test)]
mod tests {
    use axum::http::Request;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    use super::*;

    fn ui_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../ui")
    }

    async fn get(router: &Router, path: &str, headers: &[(&str, &str)]) -> Response {
        let mut request = Request::builder().uri(path);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        router
            .clone()
            .oneshot(request.body(Body::empty()).expect("a valid request"))
            .await
            .expect("infallible")
    }

    async fn body(response: Response) -> Vec<u8> {
        response
            .into_body()
            .collect()
            .await
            .expect("a readable body")
            .to_bytes()
            .to_vec()
    }

    fn header<'a>(response: &'a Response, name: &header::HeaderName) -> &'a str {
        response
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
    }

    /// Every file below `dir`, as paths relative to it with `/` separators.
    fn files_below(dir: &Path, prefix: &str, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("ui/ is readable") {
            let entry = entry.expect("a directory entry");
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = format!("{prefix}{name}");
            if entry.file_type().expect("a file type").is_dir() {
                files_below(&entry.path(), &format!("{path}/"), found);
            } else {
                found.push(path);
            }
        }
    }

    #[test]
    fn every_file_of_ui_is_embedded_and_nothing_else() {
        let mut on_disk = Vec::new();
        files_below(&ui_dir(), "", &mut on_disk);
        on_disk.retain(|path| path != "tsconfig.json");
        on_disk.sort();
        let mut embedded: Vec<String> = EMBEDDED.iter().map(|(path, _)| path.to_string()).collect();
        embedded.sort();
        assert_eq!(
            embedded, on_disk,
            "EMBEDDED in crates/control/src/ui.rs must list exactly the dashboard's files"
        );
        for (path, _) in EMBEDDED {
            assert!(content_type(path).is_some(), "{path} has no content type");
        }
    }

    #[tokio::test]
    async fn the_root_is_the_page_with_its_policy_and_no_cache() {
        let router = router(None);
        let response = get(&router, "/", &[]).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            header(&response, &header::CONTENT_TYPE),
            "text/html; charset=utf-8"
        );
        assert_eq!(header(&response, &header::CACHE_CONTROL), "no-cache");
        assert_eq!(
            header(&response, &header::CONTENT_SECURITY_POLICY),
            "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; \
             script-src 'self'; frame-ancestors 'none'"
        );
        assert_eq!(
            header(&response, &header::X_CONTENT_TYPE_OPTIONS),
            "nosniff"
        );
        let page = String::from_utf8(body(response).await).expect("UTF-8");
        assert!(page.contains(r#"<script type="module" src="app.js"></script>"#));
    }

    #[tokio::test]
    async fn scripts_styles_and_images_have_their_content_types() {
        let router = router(None);
        for (path, expected) in [
            ("/app.js", "text/javascript; charset=utf-8"),
            ("/views/tryit.js", "text/javascript; charset=utf-8"),
            ("/style.css", "text/css; charset=utf-8"),
            ("/icon.svg", "image/svg+xml"),
        ] {
            let response = get(&router, path, &[]).await;
            assert_eq!(response.status(), StatusCode::OK, "{path}");
            assert_eq!(header(&response, &header::CONTENT_TYPE), expected, "{path}");
            assert_eq!(header(&response, &header::CACHE_CONTROL), "no-cache");
            assert!(!body(response).await.is_empty(), "{path} is empty");
        }
    }

    #[tokio::test]
    async fn a_matching_etag_gets_not_modified() {
        let router = router(None);
        let first = get(&router, "/app.js", &[]).await;
        let etag = header(&first, &header::ETAG).to_owned();
        assert!(etag.starts_with('"'), "{etag}");
        let again = get(&router, "/app.js", &[("if-none-match", &etag)]).await;
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        assert!(body(again).await.is_empty());
        let other = get(&router, "/app.js", &[("if-none-match", "\"other\"")]).await;
        assert_eq!(other.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn nothing_outside_the_files_is_served() {
        let from_disk = router(Some(ui_dir()));
        let embedded = router(None);
        for router in [&embedded, &from_disk] {
            for path in [
                "/../Cargo.toml",
                "/views/../../Cargo.toml",
                "/%2e%2e/Cargo.toml",
                "/..%2fCargo.toml",
                "/.hidden.js",
                "/views/",
                "/views",
                "//etc/passwd",
                "/tsconfig.json",
                "/nothing.js",
                "/backend/demo",
                "/app.js.map",
            ] {
                let response = get(router, path, &[]).await;
                assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
            }
        }
    }

    #[tokio::test]
    async fn only_get_and_head_are_answered() {
        let router = router(None);
        let request = Request::builder()
            .method(Method::POST)
            .uri("/")
            .body(Body::empty())
            .expect("a valid request");
        let response = router.clone().oneshot(request).await.expect("infallible");
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(header(&response, &header::ALLOW), "GET, HEAD");

        let request = Request::builder()
            .method(Method::HEAD)
            .uri("/style.css")
            .body(Body::empty())
            .expect("a valid request");
        let response = router.oneshot(request).await.expect("infallible");
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            header(&response, &header::CONTENT_TYPE),
            "text/css; charset=utf-8"
        );
    }

    #[tokio::test]
    async fn from_disk_every_request_reads_the_file_as_it_is_now() {
        let dir = tempfile::tempdir().expect("a temp dir");
        std::fs::write(dir.path().join("index.html"), "first").expect("write");
        let router = router(Some(dir.path().to_path_buf()));
        assert_eq!(body(get(&router, "/", &[]).await).await, b"first");
        std::fs::write(dir.path().join("index.html"), "second").expect("write");
        assert_eq!(body(get(&router, "/", &[]).await).await, b"second");

        // A link out of the directory is not followed.
        let outside = tempfile::tempdir().expect("a temp dir");
        std::fs::write(outside.path().join("secret.js"), "secret").expect("write");
        std::os::unix::fs::symlink(
            outside.path().join("secret.js"),
            dir.path().join("linked.js"),
        )
        .expect("symlink");
        let response = get(&router, "/linked.js", &[]).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
    }
}
