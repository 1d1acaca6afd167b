//! Console sign-ins: a random session id in an `HttpOnly`, `SameSite=Strict`
//! cookie (`Secure` where the edge is reached over TLS), mapped in this
//! edge's memory to the credential presented at sign-in and a CSRF token.
//! The credential is checked again on every request with the same code MCP
//! and gRPC use, so a revoked key or an expired token ends the session.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use quiver_proto::secret_value::SecretValue;
use ring::rand::SystemRandom;

use crate::console_link::random_token;

/// The cookie's name.
pub(crate) const COOKIE: &str = "quiver_console";

/// The header every request that changes something carries, equal to the
/// session's CSRF token.
pub(crate) const CSRF_HEADER: &str = "x-quiver-csrf";

/// Most sessions one edge keeps; past it the oldest tenant session goes
/// first (an operator's is never pushed out by tenants signing in).
const MAX_SESSIONS: usize = 10_000;

/// Most sessions of one credential (signing in again past it ends that
/// credential's oldest), so one key cannot fill the edge.
const MAX_PER_CREDENTIAL: usize = 16;

/// Most sessions of one tenant, whatever its keys and tokens (signing in
/// again past it ends that tenant's oldest): one tenant minting keys cannot
/// push other tenants' sessions out.
const MAX_PER_TENANT: usize = 64;

/// A session ends this long after it began, whatever its use.
pub(crate) const MAX_AGE: Duration = Duration::from_secs(12 * 3600);

/// Who signed in.
#[derive(Debug, Clone)]
pub(crate) enum SignedIn {
    /// A tenant, by the API key or access token it presented (checked
    /// again on every request); `None` on an edge that authenticates
    /// nobody, where the anonymous caller is the built-in tenant.
    Tenant(Option<SecretValue>),
    /// The operator, by the console's operator token.
    Operator,
}

/// One session.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// Who it is.
    pub(crate) who: SignedIn,
    /// What requests that change something must echo in [`CSRF_HEADER`].
    pub(crate) csrf: String,
    /// The tenant signed in (none for the operator).
    tenant: Option<Arc<str>>,
    began: Instant,
    last: Instant,
}

/// The sessions of one edge's console.
pub(crate) struct Sessions {
    by_id: Arc<Mutex<HashMap<String, Session>>>,
    idle: Duration,
    random: SystemRandom,
}

impl Sessions {
    /// Sessions ending after `idle` without a request, counted on
    /// `/metrics` as the table `console.sessions`.
    pub(crate) fn new(idle: Duration) -> Sessions {
        let by_id = Arc::new(Mutex::new(HashMap::new()));
        let counted = Arc::downgrade(&by_id);
        quiver_telemetry::tables::watch("console.sessions", MAX_SESSIONS, move || {
            let sessions = counted.upgrade()?;
            let len = sessions.lock().ok()?.len();
            Some(len)
        });
        Sessions {
            by_id,
            idle,
            random: SystemRandom::new(),
        }
    }

    /// Starts a session for `who`, of `tenant` (none for the operator):
    /// its id (the cookie's value) and itself.
    pub(crate) fn begin(&self, who: SignedIn, tenant: Option<Arc<str>>) -> (String, Session) {
        let id = random_token(&self.random, 32);
        let now = Instant::now();
        let session = Session {
            who,
            csrf: random_token(&self.random, 24),
            tenant,
            began: now,
            last: now,
        };
        let mut sessions = self.by_id.lock().expect("console sessions");
        self.expire(&mut sessions, now);
        let oldest = |sessions: &HashMap<String, Session>, keep: &dyn Fn(&Session) -> bool| {
            sessions
                .iter()
                .filter(|(_, s)| keep(s))
                .min_by_key(|(_, s)| s.began)
                .map(|(id, _)| id.clone())
        };
        let same = |s: &Session| same_holder(&s.who, &session.who);
        if sessions.values().filter(|s| same(s)).count() >= MAX_PER_CREDENTIAL
            && let Some(id) = oldest(&sessions, &same)
        {
            sessions.remove(&id);
        }
        let same_tenant = |s: &Session| {
            session.tenant.is_some() && s.tenant.as_deref() == session.tenant.as_deref()
        };
        if sessions.values().filter(|s| same_tenant(s)).count() >= MAX_PER_TENANT
            && let Some(id) = oldest(&sessions, &same_tenant)
        {
            sessions.remove(&id);
        }
        if sessions.len() >= MAX_SESSIONS
            && let Some(id) = oldest(&sessions, &|s| !matches!(s.who, SignedIn::Operator))
                .or_else(|| oldest(&sessions, &|_| true))
        {
            sessions.remove(&id);
        }
        sessions.insert(id.clone(), session.clone());
        (id, session)
    }

    /// The live session `id` names, its idle clock reset.
    pub(crate) fn get(&self, id: &str) -> Option<Session> {
        let now = Instant::now();
        let mut sessions = self.by_id.lock().expect("console sessions");
        let session = sessions.get_mut(id)?;
        if self.ended(session, now) {
            sessions.remove(id);
            return None;
        }
        session.last = now;
        Some(session.clone())
    }

    /// Ends session `id`.
    pub(crate) fn end(&self, id: &str) {
        self.by_id.lock().expect("console sessions").remove(id);
    }

    /// Sessions alive now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_id.lock().expect("console sessions").len()
    }

    fn ended(&self, session: &Session, now: Instant) -> bool {
        now.duration_since(session.last) >= self.idle || now.duration_since(session.began) > MAX_AGE
    }

    fn expire(&self, sessions: &mut HashMap<String, Session>, now: Instant) {
        sessions.retain(|_, s| !self.ended(s, now));
    }
}

/// Whether two sessions were opened with the same credential.
fn same_holder(a: &SignedIn, b: &SignedIn) -> bool {
    match (a, b) {
        (SignedIn::Operator, SignedIn::Operator) => true,
        (SignedIn::Tenant(None), SignedIn::Tenant(None)) => true,
        (SignedIn::Tenant(Some(x)), SignedIn::Tenant(Some(y))) => same(x.expose(), y.expose()),
        _ => false,
    }
}

/// The value of `name` in a `Cookie` header.
pub(crate) fn cookie_value<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (key, value) = pair.trim().split_once('=')?;
        (key == name).then_some(value)
    })
}

/// The `Set-Cookie` value that keeps session `id` (an empty id and
/// `Max-Age=0` clear it).
pub(crate) fn set_cookie(id: &str, secure: bool) -> String {
    let max_age = if id.is_empty() { 0 } else { MAX_AGE.as_secs() };
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE}={id}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}")
}

/// Whether two strings are equal, in time that does not depend on where
/// they differ.
pub(crate) fn same(a: &str, b: &str) -> bool {
    same_bytes(a.as_bytes(), b.as_bytes())
}

/// Whether two byte strings are equal, likewise.
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    quiver_proto::secret_value::constant_time_eq(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_found_by_its_id_until_it_ends() {
        let sessions = Sessions::new(Duration::from_secs(60));
        let (id, session) = sessions.begin(SignedIn::Operator, None);
        assert!(id.len() >= 43, "{id}");
        let found = sessions.get(&id).expect("live");
        assert_eq!(found.csrf, session.csrf);
        assert!(sessions.get("not-an-id").is_none());
        sessions.end(&id);
        assert!(sessions.get(&id).is_none());
        assert_eq!(sessions.len(), 0);
    }

    #[test]
    fn one_credential_cannot_fill_the_edge() {
        let sessions = Sessions::new(Duration::from_secs(60));
        let (operator, _) = sessions.begin(SignedIn::Operator, None);
        let key = || SignedIn::Tenant(Some(SecretValue::new("qk_a_1".into())));
        let (first, _) = sessions.begin(key(), Some("acme".into()));
        for _ in 0..MAX_PER_CREDENTIAL {
            sessions.begin(key(), Some("acme".into()));
        }
        assert_eq!(sessions.len(), 1 + MAX_PER_CREDENTIAL);
        assert!(
            sessions.get(&first).is_none(),
            "the key's oldest session ended"
        );
        assert!(sessions.get(&operator).is_some(), "the operator's did not");
    }

    #[test]
    fn one_tenant_cannot_push_other_tenants_out() {
        let sessions = Sessions::new(Duration::from_secs(60));
        let (other, _) = sessions.begin(
            SignedIn::Tenant(Some(SecretValue::new("qk_b_1".into()))),
            Some("beta".into()),
        );
        // Many keys of one tenant, each signing in as often as it may.
        for key in 0..(MAX_PER_TENANT * 2) {
            let who = SignedIn::Tenant(Some(SecretValue::new(format!("qk_a_{key}"))));
            sessions.begin(who, Some("acme".into()));
        }
        assert_eq!(sessions.len(), 1 + MAX_PER_TENANT);
        assert!(
            sessions.get(&other).is_some(),
            "beta's session is still there"
        );
    }

    #[test]
    fn an_idle_session_ends() {
        let sessions = Sessions::new(Duration::ZERO);
        let (id, _) = sessions.begin(SignedIn::Tenant(None), Some("default".into()));
        assert!(sessions.get(&id).is_none());
    }

    #[test]
    fn cookies_are_read_by_name_and_set_strictly() {
        let header = "a=1; quiver_console=abc; b=2";
        assert_eq!(cookie_value(header, COOKIE), Some("abc"));
        assert_eq!(cookie_value("quiver_consolex=1", COOKIE), None);
        let set = set_cookie("abc", true);
        for part in ["HttpOnly", "SameSite=Strict", "Path=/console", "Secure"] {
            assert!(set.contains(part), "{set}");
        }
        assert!(!set_cookie("abc", false).contains("Secure"));
        assert!(set_cookie("", false).contains("Max-Age=0"));
        assert!(same("abc", "abc") && !same("abc", "abd") && !same("abc", "ab"));
    }
}
