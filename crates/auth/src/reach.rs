//! Where discovery may send Switchboard. A remote server's answers name the URLs sign-in then
//! fetches or posts to (its challenge's `resource_metadata`, its metadata's
//! `authorization_servers`, every endpoint of its authorization server's metadata). A server
//! could name an address on this machine or on a private network that it cannot reach itself,
//! and have Switchboard send requests there for it. So each such URL must be https, or on the
//! server's own origin; and it may lead no nearer than the server is: to this machine only from
//! a server on this machine, to a private network only from a server on one. Names are checked
//! where they are resolved, at each connection, so a name that resolves to a nearer address
//! fails too. Redirects are never followed.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::AuthError;

/// How near an address is, nearest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Reach {
    /// This machine (loopback, or the unspecified address, which reaches it).
    Machine,
    /// A network that is not the internet: private, link-local, shared and reserved ranges.
    Private,
    /// The internet.
    Public,
}

impl Reach {
    pub(crate) fn of_address(address: IpAddr) -> Reach {
        match address {
            IpAddr::V4(address) => of_v4(address),
            IpAddr::V6(address) => match address.to_ipv4_mapped() {
                Some(mapped) => of_v4(mapped),
                None => of_v6(address),
            },
        }
    }

    /// Where the host of `url` is: an address as it is; `localhost` (and its subdomains) is this
    /// machine; another name by what it resolves to, the nearest of its addresses (a server
    /// reachable on a private network is on it), the internet if it resolves to nothing. A
    /// name is never this machine: whoever answers for the name could otherwise make a remote
    /// server look local for a moment, and open this machine to its discovery.
    pub(crate) async fn of_host(url: &reqwest::Url) -> Reach {
        if let Some(reach) = literal(url) {
            return reach;
        }
        let Some(url::Host::Domain(name)) = url.host() else {
            return Reach::Public;
        };
        let port = url.port_or_known_default().unwrap_or(443);
        match tokio::net::lookup_host((name, port)).await {
            Ok(addresses) => Reach::of_name(addresses.map(|address| address.ip())),
            Err(_) => Reach::Public,
        }
    }

    /// Where a server is whose name resolves to `addresses`.
    fn of_name(addresses: impl Iterator<Item = IpAddr>) -> Reach {
        addresses
            .map(Reach::of_address)
            .min()
            .map_or(Reach::Public, |nearest| nearest.max(Reach::Private))
    }

    fn describe(self) -> &'static str {
        match self {
            Reach::Machine => "this machine",
            Reach::Private => "a private network",
            Reach::Public => "the internet",
        }
    }
}

/// Where the host of `url` is, if that is known without resolving a name.
fn literal(url: &reqwest::Url) -> Option<Reach> {
    match url.host()? {
        url::Host::Ipv4(address) => Some(of_v4(address)),
        url::Host::Ipv6(address) => Some(Reach::of_address(IpAddr::V6(address))),
        url::Host::Domain(name) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            (name == "localhost" || name.ends_with(".localhost")).then_some(Reach::Machine)
        }
    }
}

fn of_v4(address: Ipv4Addr) -> Reach {
    let [a, b, c, _] = address.octets();
    if address.is_loopback() || address.is_unspecified() {
        return Reach::Machine;
    }
    let private = address.is_private()
        || address.is_link_local()
        || address.is_broadcast()
        || address.is_multicast()
        || address.is_documentation()
        || a == 0 // "this network"
        || (a == 100 && (b & 0xc0) == 64) // shared address space (carrier-grade NAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (b & 0xfe) == 18) // benchmarking
        || a >= 240; // reserved
    match private {
        true => Reach::Private,
        false => Reach::Public,
    }
}

fn of_v6(address: Ipv6Addr) -> Reach {
    if address.is_loopback() || address.is_unspecified() {
        return Reach::Machine;
    }
    let first = address.segments()[0];
    let private = (first & 0xfe00) == 0xfc00 // unique local
        || (first & 0xffc0) == 0xfe80 // link-local
        || address.is_multicast()
        || (first == 0x2001 && address.segments()[1] == 0x0db8) // documentation
        || first == 0x0064 // NAT64 and local translation
        || address.to_ipv4().is_some(); // IPv4-compatible, deprecated
    match private {
        true => Reach::Private,
        false => Reach::Public,
    }
}

/// The bounds of one server's sign-in: its origin and how near it is.
#[derive(Debug, Clone)]
pub(crate) struct Bounds {
    origin: url::Origin,
    reach: Reach,
}

impl Bounds {
    pub(crate) async fn of(server: &reqwest::Url) -> Bounds {
        Bounds {
            origin: server.origin(),
            reach: Reach::of_host(server).await,
        }
    }

    /// Bounds of a server at `server` whose host is at `reach`, without resolving it.
    #[cfg(test)]
    pub(crate) fn fixed(server: &str, reach: Reach) -> Bounds {
        Bounds {
            origin: reqwest::Url::parse(server).expect("a URL").origin(),
            reach,
        }
    }

    /// How near the server is: the nearest that its sign-in may lead to.
    pub(crate) fn reach(&self) -> Reach {
        self.reach
    }

    /// Whether sign-in may send a request (or the browser) to `url`, named by `what` (such as
    /// "the token endpoint"), as the server's answers have it; the error says why not.
    pub(crate) fn check(&self, url: &reqwest::Url, what: &str) -> Result<(), AuthError> {
        let own = url.origin() == self.origin;
        let near = literal(url);
        let secure = match url.scheme() {
            "https" => true,
            "http" => own || (near == Some(Reach::Machine) && self.reach == Reach::Machine),
            _ => false,
        };
        if !secure {
            return Err(AuthError::Metadata(format!(
                "{what} {url} is not an https:// URL (plain http:// is only for the server's own \
                 origin, or this machine when the server is on it); refused"
            )));
        }
        match near {
            Some(reach) if !own && reach < self.reach => Err(AuthError::Metadata(format!(
                "{what} {url} is on {}, which only a server on {} may send sign-in to (this one \
                 is on {}); refused",
                reach.describe(),
                reach.describe(),
                self.reach.describe()
            ))),
            _ => Ok(()),
        }
    }
}

/// Resolves names for sign-in's requests, dropping every address nearer than `nearest`: what
/// a name resolves to is checked when it is connected to, not before (when it could change).
#[derive(Debug)]
pub(crate) struct Resolver {
    pub(crate) nearest: Reach,
}

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let nearest = self.nearest;
        let name = name.as_str().to_owned();
        Box::pin(async move {
            let addresses: Vec<SocketAddr> = match tokio::net::lookup_host((name.as_str(), 0)).await
            {
                Ok(addresses) => addresses.collect(),
                Err(error) => return Err(Box::new(error) as BoxError),
            };
            let allowed: Vec<SocketAddr> = addresses
                .iter()
                .copied()
                .filter(|address| Reach::of_address(address.ip()) >= nearest)
                .collect();
            if allowed.is_empty() && !addresses.is_empty() {
                let nearer = addresses
                    .iter()
                    .map(|address| Reach::of_address(address.ip()))
                    .min()
                    .unwrap_or(Reach::Machine);
                return Err(BoxError::from(format!(
                    "{name} resolves to {}, where a server on {} may not send sign-in; refused",
                    nearer.describe(),
                    nearest.describe()
                )));
            }
            Ok::<reqwest::dns::Addrs, BoxError>(Box::new(allowed.into_iter()))
        })
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// An HTTP client for sign-in requests of a server at `nearest`: no redirects, bounded, and
/// names resolved by a [`Resolver`].
pub(crate) fn client(nearest: Reach) -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(10))
        .timeout(super::REQUEST_TIMEOUT)
        // Metadata and tokens come from where they were asked for, never via a redirect.
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
        .dns_resolver(Resolver { nearest })
        .build()
        .expect("an HTTP client with no unusual settings builds")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> reqwest::Url {
        reqwest::Url::parse(text).expect("a URL")
    }

    fn bounds(server: &str, reach: Reach) -> Bounds {
        Bounds::fixed(server, reach)
    }

    #[test]
    fn addresses_are_placed_nearest_first() {
        let reach = |text: &str| Reach::of_address(text.parse().expect("an address"));
        assert_eq!(reach("127.0.0.1"), Reach::Machine);
        assert_eq!(reach("127.8.9.10"), Reach::Machine);
        assert_eq!(
            reach("0.0.0.0"),
            Reach::Machine,
            "connecting to it reaches this machine"
        );
        assert_eq!(reach("::1"), Reach::Machine);
        assert_eq!(reach("::ffff:127.0.0.1"), Reach::Machine);
        for private in [
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "192.0.2.2",
            "fd00::2",
            "fe80::1",
            "::ffff:10.0.0.1",
        ] {
            assert_eq!(reach(private), Reach::Private, "{private}");
        }
        assert_eq!(reach("93.184.216.34"), Reach::Public);
        assert_eq!(reach("2606:4700::1111"), Reach::Public);
    }

    #[test]
    fn a_server_named_by_a_name_is_never_on_this_machine() {
        let name = |addresses: &[&str]| {
            Reach::of_name(
                addresses
                    .iter()
                    .map(|text| text.parse().expect("an address")),
            )
        };
        assert_eq!(name(&["93.184.216.34"]), Reach::Public);
        assert_eq!(name(&["93.184.216.34", "10.0.0.5"]), Reach::Private);
        // A name that resolves to this machine (now) may resolve elsewhere the next moment.
        assert_eq!(name(&["127.0.0.1"]), Reach::Private);
        assert_eq!(name(&[]), Reach::Public);
    }

    #[test]
    fn discovery_leads_no_nearer_than_the_server_and_only_over_https() {
        let public = bounds("https://mcp.example.com/mcp", Reach::Public);
        assert!(
            public
                .check(&url("https://auth.example.com/token"), "t")
                .is_ok()
        );
        assert!(
            public
                .check(&url("https://mcp.example.com/.well-known/x"), "t")
                .is_ok()
        );
        for refused in [
            "http://auth.example.com/token",
            "https://127.0.0.1/token",
            "https://localhost:9000/token",
            "https://api.localhost/token",
            "https://[::1]/token",
            "https://10.0.0.5/token",
            "https://169.254.169.254/latest",
            "https://0.0.0.0:8080/token",
            "ftp://auth.example.com/token",
        ] {
            let error = public.check(&url(refused), "the token endpoint");
            assert!(
                matches!(&error, Err(AuthError::Metadata(message)) if message.contains("refused")),
                "{refused}: {error:?}"
            );
        }
        let private = bounds("https://10.0.0.5/mcp", Reach::Private);
        assert!(private.check(&url("https://10.0.0.6/token"), "t").is_ok());
        assert!(private.check(&url("https://127.0.0.1/token"), "t").is_err());
        assert!(private.check(&url("http://10.0.0.6/token"), "t").is_err());
        let machine = bounds("http://127.0.0.1:8000/mcp", Reach::Machine);
        assert!(
            machine
                .check(&url("http://127.0.0.1:9000/token"), "t")
                .is_ok()
        );
        assert!(
            machine
                .check(&url("http://localhost:9000/token"), "t")
                .is_ok()
        );
        assert!(
            machine
                .check(&url("https://auth.example.com/token"), "t")
                .is_ok()
        );
        assert!(
            machine
                .check(&url("http://auth.example.com/token"), "t")
                .is_err(),
            "codes and tokens never cross the network in clear"
        );
        // A server's own origin is where it is: plain http there is its own choice.
        let plain = bounds("http://192.0.2.2:8000/mcp", Reach::Private);
        assert!(
            plain
                .check(&url("http://192.0.2.2:8000/token"), "t")
                .is_ok()
        );
        assert!(
            plain
                .check(&url("http://127.0.0.1:8000/token"), "t")
                .is_err()
        );
    }

    #[tokio::test]
    async fn names_that_resolve_nearer_than_allowed_are_refused_when_connected_to() {
        use reqwest::dns::Resolve as _;
        let name = |text: &str| text.parse::<reqwest::dns::Name>().expect("a name");
        let from_public = Resolver {
            nearest: Reach::Public,
        };
        let refused = from_public.resolve(name("localhost")).await;
        let message = refused
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
        assert!(message.contains("resolves to this machine"), "{message}");
        let from_machine = Resolver {
            nearest: Reach::Machine,
        };
        let resolved: Vec<SocketAddr> = from_machine
            .resolve(name("localhost"))
            .await
            .expect("a server on this machine may")
            .collect();
        assert!(!resolved.is_empty());
    }
}
