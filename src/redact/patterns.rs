//! The rule table of the pattern layer: which credential formats are recognised, the
//! keywords that wake each rule, and the checks that keep look-alikes out.
//!
//! Coverage is measured against gitleaks' default rules at a pinned commit
//! ([`GITLEAKS_COMMIT`]): every rule id there is either named in some rule's `covers` or
//! listed in [`GITLEAKS_LEFT_OUT`] with the reason (a unit test holds both lists to the
//! pinned rule list). The expressions and the checks are our own.

use std::ops::Range;

use regex::Captures;

/// What every secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// The gitleaks commit whose `config/gitleaks.toml` the coverage is measured against.
#[cfg(test)]
pub(crate) const GITLEAKS_COMMIT: &str = "009e025ad4106ab333aa0b9dc4f2a884390d134c";

/// One credential format (or a family sharing one expression).
pub(crate) struct Rule {
    /// Short name, for test failure messages.
    #[cfg_attr(not(test), expect(dead_code, reason = "read by tests only"))]
    pub(crate) name: &'static str,
    /// The gitleaks rule ids this rule stands for (empty for formats gitleaks has no rule
    /// for).
    #[cfg_attr(not(test), expect(dead_code, reason = "read by tests only"))]
    pub(crate) covers: &'static [&'static str],
    /// Lower-case ASCII words, one of which occurs (in any case) in every text the rule can
    /// match. The rule only runs when the keyword pass saw one of them. Empty: the rule runs
    /// on every text, so its expression must be cheap to search for (a literal the regex
    /// engine skips to, or a DFA that fails fast).
    pub(crate) keywords: &'static [&'static str],
    pub(crate) finder: Finder,
}

/// How a rule finds its secrets.
pub(crate) enum Finder {
    /// A regular expression. The secret is the first unnamed capture group that takes part
    /// in the match, or the whole match when there is none; named groups are context for
    /// the check. `check` may reject a match (look-alikes, placeholders, code).
    Regex {
        regex: &'static str,
        check: Option<Check>,
        /// A cheaper test on the bare match, run before the capture groups are computed;
        /// false rejects the match.
        screen: Option<Screen>,
        /// Every match starts where one of the rule's keywords occurs and ends on the same
        /// line (assignments: the key word, then the value). The rule then searches only
        /// the rest of each line from a keyword's first occurrence on it, instead of the
        /// whole text; a unit test checks that this finds what a whole-text search finds.
        at_keyword: bool,
    },
    /// Hand-written code that pushes the byte ranges of the secrets it finds.
    Custom(fn(&str, &mut Vec<Range<usize>>)),
}

/// Accepts or rejects a match: the whole text, the match's groups and the secret's range.
pub(crate) type Check = fn(&str, &Captures<'_>, Range<usize>) -> bool;

/// Accepts or rejects a match from the whole text and the match's range alone.
pub(crate) type Screen = fn(&str, Range<usize>) -> bool;

const fn rule(
    name: &'static str,
    covers: &'static [&'static str],
    keywords: &'static [&'static str],
    regex: &'static str,
    check: Option<Check>,
    at_keyword: bool,
) -> Rule {
    Rule {
        name,
        covers,
        keywords,
        finder: Finder::Regex {
            regex,
            check,
            screen: None,
            at_keyword,
        },
    }
}

/// A rule that searches the whole text (once a keyword woke it).
const fn regex(
    name: &'static str,
    covers: &'static [&'static str],
    keywords: &'static [&'static str],
    regex: &'static str,
) -> Rule {
    rule(name, covers, keywords, regex, None, false)
}

/// [`regex`] with a check.
const fn checked(
    name: &'static str,
    covers: &'static [&'static str],
    keywords: &'static [&'static str],
    regex: &'static str,
    check: Check,
) -> Rule {
    rule(name, covers, keywords, regex, Some(check), false)
}

/// A rule whose matches start at a keyword and stay on its line (see
/// [`Finder::Regex::at_keyword`]).
const fn keyed(
    name: &'static str,
    covers: &'static [&'static str],
    keywords: &'static [&'static str],
    regex: &'static str,
) -> Rule {
    rule(name, covers, keywords, regex, None, true)
}

/// [`keyed`] with a check.
const fn keyed_checked(
    name: &'static str,
    covers: &'static [&'static str],
    keywords: &'static [&'static str],
    regex: &'static str,
    check: Check,
) -> Rule {
    rule(name, covers, keywords, regex, Some(check), true)
}

/// ASCII word boundary: the Unicode one would stop the fast DFA on non-ASCII text.
macro_rules! wb {
    () => {
        r"(?-u:\b)"
    };
}

/// A UUID (any case under `(?i)`).
macro_rules! uuid {
    () => {
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    };
}

/// `<name…> <op> <value>`: an identifier containing one of `names` (plus up to 30 more
/// name characters, as in `ALIBABA_CLOUD_ACCESS_KEY_SECRET`), an assignment (`=`, `:`, `:=`, `=>`, `?=` or a `,` as in
/// `("name", "value")`), an optional quote and a value of exactly the given shape, then
/// the end of the value. Case-insensitive; only the value is replaced. The match starts at
/// the name, so a name that is not in the text costs nothing beyond the keyword pass.
macro_rules! assigned {
    ($names:literal, $value:expr) => {
        concat!(
            r"(?i)(?:",
            $names,
            r#")[a-z0-9_. \t-]{0,30}(?:\\?["'`])?[ \t]*(?:=>|:=|\?=|[=:,])[ \t]*(?:\\?["'`])?("#,
            $value,
            r#")(?:["'`;,)}<&\\\] \t\r\n]|$)"#
        )
    };
}

/// Every rule. The order does not matter: all spans are collected before anything is
/// replaced, and overlapping spans are merged.
pub(crate) const RULES: &[Rule] = &[
    // ---- Private keys ------------------------------------------------------------------
    regex(
        "pem_private_key",
        &["private-key"],
        &["-----begin"],
        r"-----BEGIN[A-Z0-9 _-]*PRIVATE KEY-----(?s:.)*?-----END[A-Z0-9 _-]*PRIVATE KEY-----",
    ),
    regex(
        "pgp_private_key",
        &["private-key"],
        &["-----begin"],
        r"-----BEGIN PGP PRIVATE KEY BLOCK-----(?s:.)*?-----END PGP PRIVATE KEY BLOCK-----",
    ),
    // A private key block whose END line never came (truncated output): the header, armor
    // headers and every following base64 line.
    regex(
        "truncated_private_key",
        &["private-key"],
        &["-----begin"],
        r"-----BEGIN[A-Z0-9 _-]*PRIVATE KEY(?: BLOCK)?-----(?:\r?\n(?:[A-Za-z0-9+/=]{16,}|[A-Za-z-]+: [^\r\n]*|[ \t]*))*",
    ),
    regex(
        "age_secret_key",
        &["age-secret-key"],
        &["age-secret-key-1"],
        r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
    ),
    // ---- Cloud providers ---------------------------------------------------------------
    regex(
        "aws_access_key_id",
        &["aws-access-token"],
        &["akia", "asia", "abia", "acca", "a3t"],
        concat!(
            wb!(),
            r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}",
            wb!()
        ),
    ),
    // `aws_secret_access_key = …` (credentials file, env, JSON): gitleaks leaves it to its
    // entropy-only generic rule; the 40-character value is worth a rule of its own.
    keyed(
        "aws_secret_access_key",
        &[],
        &["secret_access_key", "secretaccesskey", "secret-access-key"],
        r#"(?i)secret[_-]?access[_-]?key(?:\\?["'`])?[ \t]*(?:=>|:=|[=:])[ \t]*(?:\\?["'`])?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
    ),
    keyed(
        "aws_session_token",
        &[],
        &["session_token", "sessiontoken", "session-token"],
        r#"(?i)session[_-]?token(?:\\?["'`])?[ \t]*(?:=>|:=|[=:])[ \t]*(?:\\?["'`])?([A-Za-z0-9/+=]{100,})"#,
    ),
    regex(
        "gcp_api_key",
        &["gcp-api-key"],
        &["aiza"],
        concat!(wb!(), r"AIza[0-9A-Za-z_-]{35,}"),
    ),
    regex(
        "google_oauth_access",
        &[],
        &["ya29."],
        r"ya29\.[A-Za-z0-9_.-]{20,}",
    ),
    regex(
        "google_oauth_refresh",
        &[],
        &["1//0"],
        concat!(wb!(), r"1//0[A-Za-z0-9_-]{30,}"),
    ),
    regex(
        "azure_ad_client_secret",
        &["azure-ad-client-secret"],
        &["q~"],
        r#"(?:^|[\\'"`\s>=:(,)])([a-zA-Z0-9_~.]{3}[0-9]Q~[a-zA-Z0-9_~.-]{31,34})(?:$|[\\'"`\s<),])"#,
    ),
    regex(
        "azure_storage_account_key",
        &[],
        &["accountkey"],
        r"(?i:AccountKey)=([A-Za-z0-9+/=]{40,})",
    ),
    regex(
        "alibaba_access_key_id",
        &["alibaba-access-key-id"],
        &["ltai"],
        concat!(wb!(), r"LTAI[A-Za-z0-9]{20}", wb!()),
    ),
    regex(
        "cloudflare_origin_ca_key",
        &["cloudflare-origin-ca-key"],
        &["v1.0-"],
        concat!(wb!(), r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}", wb!()),
    ),
    regex(
        "digitalocean",
        &[
            "digitalocean-access-token",
            "digitalocean-pat",
            "digitalocean-refresh-token",
        ],
        &["doo_v1_", "dop_v1_", "dor_v1_"],
        concat!(wb!(), r"do[opr]_v1_[a-f0-9]{64}", wb!()),
    ),
    regex(
        "flyio",
        &["flyio-access-token"],
        &["fo1_", "fm1a_", "fm1r_", "fm2_"],
        concat!(
            wb!(),
            r"(?:fo1_[A-Za-z0-9_-]{43}|fm1[ar]_[A-Za-z0-9+/]{100,}={0,3}|fm2_[A-Za-z0-9+/]{100,}={0,3})"
        ),
    ),
    regex(
        "heroku_v2",
        &["heroku-api-key-v2"],
        &["hrku-aa"],
        concat!(wb!(), r"HRKU-AA[0-9A-Za-z_-]{58}"),
    ),
    regex(
        "scalingo",
        &["scalingo-api-token"],
        &["tk-us-"],
        concat!(wb!(), r"tk-us-[A-Za-z0-9_-]{48}"),
    ),
    regex(
        "terraform_cloud",
        &["hashicorp-tf-api-token"],
        &["atlasv1"],
        concat!(wb!(), r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}"),
    ),
    regex(
        "vault_token",
        &["vault-service-token", "vault-batch-token"],
        &["hvs.", "hvb."],
        concat!(wb!(), r"hv[sb]\.[A-Za-z0-9_-]{30,}"),
    ),
    // Vault's legacy service tokens: `s.` and 24 characters of mixed case with a digit.
    // "s." is far too common to be a keyword; the regex engine's own search for the
    // literal is cheap (a few microseconds for 64 KiB).
    checked(
        "vault_legacy_token",
        &["vault-service-token"],
        &[],
        concat!(wb!(), r"s\.[A-Za-z0-9]{24}", wb!()),
        mixed_case_with_digit,
    ),
    // ---- AI providers ------------------------------------------------------------------
    // `sk-…`: OpenAI (every generation, `sk-proj-`, `sk-svcacct-`, `sk-admin-`), Anthropic
    // (`sk-ant-api03-`, `sk-ant-admin01-`) and the many OpenAI-compatible services.
    regex(
        "sk_dash_key",
        &[
            "openai-api-key",
            "anthropic-api-key",
            "anthropic-admin-api-key",
        ],
        &["sk-"],
        concat!(wb!(), r"sk-[A-Za-z0-9_-]{32,}"),
    ),
    regex(
        "groq",
        &[],
        &["gsk_"],
        concat!(wb!(), r"gsk_[A-Za-z0-9]{32,}"),
    ),
    regex(
        "xai",
        &[],
        &["xai-"],
        concat!(wb!(), r"xai-[A-Za-z0-9_-]{32,}"),
    ),
    regex(
        "huggingface",
        &[
            "huggingface-access-token",
            "huggingface-organization-api-token",
        ],
        &["hf_", "api_org_"],
        concat!(
            wb!(),
            r"(?:hf_[A-Za-z0-9]{32,}|api_org_[A-Za-z]{34}",
            wb!(),
            ")"
        ),
    ),
    regex(
        "perplexity",
        &["perplexity-api-key"],
        &["pplx-"],
        concat!(wb!(), r"pplx-[A-Za-z0-9]{48}", wb!()),
    ),
    // ---- Source hosting, CI, package registries -----------------------------------------
    regex(
        "github_token",
        &[
            "github-pat",
            "github-oauth",
            "github-app-token",
            "github-refresh-token",
        ],
        &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
        concat!(wb!(), r"gh[pousr]_[A-Za-z0-9]{36,}"),
    ),
    regex(
        "github_fine_grained_pat",
        &["github-fine-grained-pat"],
        &["github_pat_"],
        concat!(wb!(), r"github_pat_[A-Za-z0-9_]{22,}"),
    ),
    regex(
        "gitlab_token",
        &[
            "gitlab-pat",
            "gitlab-pat-routable",
            "gitlab-cicd-job-token",
            "gitlab-deploy-token",
            "gitlab-feature-flag-client-token",
            "gitlab-feed-token",
            "gitlab-incoming-mail-token",
            "gitlab-kubernetes-agent-token",
            "gitlab-oauth-app-secret",
            "gitlab-ptt",
            "gitlab-runner-authentication-token",
            "gitlab-runner-authentication-token-routable",
            "gitlab-scim-token",
        ],
        &[
            "glpat-", "glcbt-", "gldt-", "glffct-", "glft-", "glimt-", "glagent-", "gloas-",
            "glptt-", "glrt-", "glsoat-",
        ],
        concat!(
            wb!(),
            r"(?:glpat|glcbt|gldt|glffct|glft|glimt|glagent|gloas|glptt|glrt|glsoat)-[A-Za-z0-9_-]{20,}(?:\.[0-9a-z]{9}",
            wb!(),
            ")?"
        ),
    ),
    regex(
        "gitlab_runner_registration",
        &["gitlab-rrt"],
        &["gr1348941"],
        r"GR1348941[A-Za-z0-9_-]{20,}",
    ),
    keyed(
        "gitlab_session_cookie",
        &["gitlab-session-cookie"],
        &["_gitlab_session="],
        r"_gitlab_session=([0-9a-z]{32})",
    ),
    regex(
        "npm",
        &["npm-access-token"],
        &["npm_"],
        concat!(wb!(), r"npm_[A-Za-z0-9]{36,}"),
    ),
    regex(
        "pypi",
        &["pypi-upload-token"],
        &["pypi-"],
        concat!(wb!(), r"pypi-[A-Za-z0-9_-]{20,}"),
    ),
    regex(
        "rubygems",
        &["rubygems-api-token"],
        &["rubygems_"],
        concat!(wb!(), r"rubygems_[a-f0-9]{48}", wb!()),
    ),
    regex(
        "clojars",
        &["clojars-api-token"],
        &["clojars_"],
        concat!(wb!(), r"(?i:CLOJARS_[a-z0-9]{60})", wb!()),
    ),
    regex(
        "artifactory",
        &["artifactory-api-key", "artifactory-reference-token"],
        &["akcp", "cmvmd"],
        concat!(
            wb!(),
            r"(?:AKCp[A-Za-z0-9]{69}|cmVmd[A-Za-z0-9]{59})",
            wb!()
        ),
    ),
    regex(
        "atlassian_api_token",
        &["atlassian-api-token"],
        &["atatt3"],
        concat!(wb!(), r"ATATT3[A-Za-z0-9_=-]{60,}"),
    ),
    regex(
        "sourcegraph",
        &["sourcegraph-access-token"],
        &["sgp_"],
        concat!(
            wb!(),
            r"sgp_(?:(?:[a-fA-F0-9]{16}|local)_)?[a-fA-F0-9]{40}",
            wb!()
        ),
    ),
    regex(
        "octopus_deploy",
        &["octopus-deploy-api-key"],
        &["api-"],
        concat!(wb!(), r"API-[A-Z0-9]{26}", wb!()),
    ),
    regex(
        "pulumi",
        &["pulumi-api-token"],
        &["pul-"],
        concat!(wb!(), r"pul-[a-f0-9]{40}", wb!()),
    ),
    regex(
        "prefect",
        &["prefect-api-token"],
        &["pnu_"],
        concat!(wb!(), r"pnu_[A-Za-z0-9]{36}", wb!()),
    ),
    regex(
        "infracost",
        &["infracost-api-token"],
        &["ico-"],
        concat!(wb!(), r"ico-[A-Za-z0-9]{32}", wb!()),
    ),
    regex(
        "harness",
        &["harness-api-key"],
        &["pat.", "sat."],
        concat!(
            wb!(),
            r"(?:pat|sat)\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}",
            wb!()
        ),
    ),
    regex(
        "openshift",
        &["openshift-user-token"],
        &["sha256~"],
        concat!(wb!(), r"sha256~[A-Za-z0-9_-]{43}"),
    ),
    regex(
        "databricks",
        &["databricks-api-token"],
        &["dapi"],
        concat!(wb!(), r"dapi[a-f0-9]{32}(?:-[0-9])?", wb!()),
    ),
    regex(
        "dynatrace",
        &["dynatrace-api-token"],
        &["dt0c01."],
        concat!(wb!(), r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}", wb!()),
    ),
    regex(
        "doppler",
        &["doppler-api-token"],
        &[
            "dp.pt.",
            "dp.st.",
            "dp.ct.",
            "dp.sa.",
            "dp.scim.",
            "dp.audit.",
        ],
        concat!(
            wb!(),
            r"dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,44}",
            wb!()
        ),
    ),
    regex(
        "defined_networking",
        &["defined-networking-api-token"],
        &["dnkey-"],
        concat!(wb!(), r"dnkey-[A-Za-z0-9=_-]{26}-[A-Za-z0-9=_-]{52}"),
    ),
    regex(
        "grafana",
        &[
            "grafana-api-key",
            "grafana-cloud-api-token",
            "grafana-service-account-token",
        ],
        &["eyjrijoi", "glc_", "glsa_"],
        concat!(
            wb!(),
            r"(?:eyJrIjoi[A-Za-z0-9]{70,}={0,3}|glc_[A-Za-z0-9+/]{32,}={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}",
            wb!(),
            ")"
        ),
    ),
    regex(
        "sentry_token",
        &["sentry-org-token", "sentry-user-token"],
        &["sntrys_", "sntryu_"],
        concat!(
            wb!(),
            r"(?:sntrys_eyJ[A-Za-z0-9+/=_]{50,}|sntryu_[a-f0-9]{64}",
            wb!(),
            ")"
        ),
    ),
    regex(
        "new_relic",
        &[
            "new-relic-user-api-key",
            "new-relic-insert-key",
            "new-relic-browser-api-token",
        ],
        &["nrak-", "nrii-", "nrjs-"],
        concat!(
            wb!(),
            r"(?:NRAK-[A-Za-z0-9]{27}",
            wb!(),
            r"|NRII-[A-Za-z0-9-]{32}|NRJS-[a-f0-9]{19}",
            wb!(),
            ")"
        ),
    ),
    regex(
        "postman",
        &["postman-api-token"],
        &["pmak-"],
        concat!(wb!(), r"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}", wb!()),
    ),
    regex(
        "readme",
        &["readme-api-token"],
        &["rdme_"],
        concat!(wb!(), r"rdme_[a-z0-9]{70}", wb!()),
    ),
    regex(
        "frameio",
        &["frameio-api-token"],
        &["fio-u-"],
        concat!(wb!(), r"fio-u-[A-Za-z0-9_=-]{64}"),
    ),
    regex(
        "typeform",
        &["typeform-api-token"],
        &["tfp_"],
        concat!(wb!(), r"tfp_[A-Za-z0-9_=.-]{59}"),
    ),
    regex(
        "linear_api_key",
        &["linear-api-key"],
        &["lin_api_"],
        concat!(wb!(), r"lin_api_[A-Za-z0-9]{40}", wb!()),
    ),
    regex(
        "notion",
        &["notion-api-token"],
        &["ntn_"],
        concat!(wb!(), r"ntn_[0-9]{11}[A-Za-z0-9]{35}", wb!()),
    ),
    regex(
        "clickhouse_cloud",
        &["clickhouse-cloud-api-secret-key"],
        &["4b1d"],
        concat!(wb!(), r"4b1d[A-Za-z0-9]{38}", wb!()),
    ),
    regex(
        "maxmind",
        &["maxmind-license-key"],
        &["_mmk"],
        concat!(wb!(), r"[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk", wb!()),
    ),
    regex(
        "settlemint",
        &[
            "settlemint-application-access-token",
            "settlemint-personal-access-token",
            "settlemint-service-access-token",
        ],
        &["sm_aat_", "sm_pat_", "sm_sat_"],
        concat!(wb!(), r"sm_(?:aat|pat|sat)_[A-Za-z0-9]{16}", wb!()),
    ),
    regex(
        "planetscale",
        &[
            "planetscale-api-token",
            "planetscale-oauth-token",
            "planetscale-password",
        ],
        &["pscale_tkn_", "pscale_oauth_", "pscale_pw_"],
        concat!(wb!(), r"pscale_(?:tkn|oauth|pw)_[A-Za-z0-9_=.-]{32,64}"),
    ),
    regex(
        "onepassword_secret_key",
        &["1password-secret-key"],
        &["a3-"],
        concat!(
            wb!(),
            r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
            wb!()
        ),
    ),
    regex(
        "onepassword_service_account",
        &["1password-service-account-token"],
        &["ops_eyj"],
        concat!(wb!(), r"ops_eyJ[A-Za-z0-9+/]{100,}={0,3}"),
    ),
    regex(
        "authress",
        &["authress-service-client-access-key"],
        &[".acc_", ".acc-"],
        concat!(
            wb!(),
            r"(?:sc|ext|scauth|authress)_[A-Za-z0-9]{5,30}\.[A-Za-z0-9]{4,6}\.acc[_-][A-Za-z0-9-]{10,32}\.[A-Za-z0-9+/_=-]{30,120}"
        ),
    ),
    regex(
        "adobe_client_secret",
        &["adobe-client-secret"],
        &["p8e-"],
        concat!(wb!(), r"p8e-[A-Za-z0-9]{32}", wb!()),
    ),
    regex(
        "intra42",
        &["intra42-client-secret"],
        &["s-s4t2ud-", "s-s4t2af-"],
        concat!(wb!(), r"s-s4t2(?:ud|af)-[A-Fa-f0-9]{64}", wb!()),
    ),
    regex(
        "easypost",
        &["easypost-api-token", "easypost-test-api-token"],
        &["ezak", "eztk"],
        concat!(wb!(), r"EZ[AT]K[A-Za-z0-9]{54}", wb!()),
    ),
    regex(
        "duffel",
        &["duffel-api-token"],
        &["duffel_"],
        concat!(wb!(), r"duffel_(?:test|live)_[A-Za-z0-9_=-]{43}"),
    ),
    // ---- Payments and commerce ---------------------------------------------------------
    regex(
        "stripe",
        &["stripe-access-token"],
        &["k_live_", "k_test_", "k_prod_"],
        concat!(wb!(), r"[rs]k_(?:live|test|prod)_[A-Za-z0-9]{10,99}", wb!()),
    ),
    regex(
        "stripe_webhook_secret",
        &[],
        &["whsec_"],
        r"whsec_[A-Za-z0-9+/=]{24,}",
    ),
    regex(
        "shopify",
        &[
            "shopify-access-token",
            "shopify-custom-access-token",
            "shopify-private-app-access-token",
            "shopify-shared-secret",
        ],
        &["shpat_", "shpca_", "shppa_", "shpss_"],
        concat!(wb!(), r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", wb!()),
    ),
    regex(
        "square",
        &["square-access-token"],
        &["eaaa", "sq0atp-", "sq0csp-"],
        concat!(
            wb!(),
            r"(?:EAAA[A-Za-z0-9_-]{22,60}|sq0atp-[A-Za-z0-9_-]{22,60}|sq0csp-[A-Za-z0-9_-]{43})"
        ),
    ),
    regex(
        "flutterwave",
        &[
            "flutterwave-public-key",
            "flutterwave-secret-key",
            "flutterwave-encryption-key",
        ],
        &["flwseck", "flwpubk"],
        concat!(
            wb!(),
            r"FLW(?:SECK|PUBK)(?:_TEST)?-[A-Ha-h0-9]{12}(?:[A-Ha-h0-9]{20}-X)?"
        ),
    ),
    regex(
        "shippo",
        &["shippo-api-token"],
        &["shippo_"],
        concat!(wb!(), r"shippo_(?:live|test)_[a-fA-F0-9]{40}", wb!()),
    ),
    regex(
        "facebook_page_token",
        &["facebook-page-access-token"],
        &["eaam", "eaac"],
        concat!(wb!(), r"EAA[MC][A-Za-z0-9]{100,}"),
    ),
    // An app access token (`app id|app secret`), as gitleaks only where "facebook" or an
    // `access_token=` parameter is in the text.
    regex(
        "facebook_app_token",
        &["facebook-access-token"],
        &["facebook", "access_token="],
        concat!(
            wb!(),
            r"[0-9]{15,16}(?:\||%7[Cc])[0-9A-Za-z_-]{27,40}",
            wb!()
        ),
    ),
    // ---- Messaging and e-mail ----------------------------------------------------------
    regex(
        "slack_token",
        &[
            "slack-bot-token",
            "slack-user-token",
            "slack-legacy-bot-token",
            "slack-legacy-token",
            "slack-legacy-workspace-token",
            "slack-config-access-token",
            "slack-config-refresh-token",
        ],
        &["xox"],
        concat!(wb!(), r"(?:xoxe\.)?xox[abposre]-[A-Za-z0-9-]{10,}"),
    ),
    regex(
        "slack_app_token",
        &["slack-app-token"],
        &["xapp-"],
        concat!(wb!(), r"(?i:xapp)-[0-9]+-[A-Za-z0-9-]{10,}"),
    ),
    // Only the path after `services/` (or `workflows/`, `triggers/`) is the secret.
    keyed(
        "slack_webhook_url",
        &["slack-webhook-url"],
        &["hooks.slack.com"],
        r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/_-]{20,})",
    ),
    regex(
        "microsoft_teams_webhook",
        &["microsoft-teams-webhook"],
        &["webhook.office.com"],
        concat!(
            r"(?i)\.webhook\.office\.com/webhookb2/(",
            uuid!(),
            "@",
            uuid!(),
            r"/IncomingWebhook/[a-z0-9]{32}/",
            uuid!(),
            ")"
        ),
    ),
    regex(
        "sendgrid",
        &["sendgrid-api-token"],
        &["sg."],
        r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{30,}",
    ),
    regex(
        "sendinblue",
        &["sendinblue-api-token"],
        &["xkeysib-"],
        concat!(wb!(), r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}", wb!()),
    ),
    // A bot token without the word "telegram" around it too: the bot's id, a colon and 35
    // characters that start with `AA` (also right after `/bot` in an API URL).
    regex(
        "telegram_bot",
        &["telegram-bot-api-token"],
        &[":aa"],
        concat!(
            r"(?:^|[^A-Za-z0-9_]|bot)([0-9]{5,}:AA[A-Za-z0-9_-]{30,})",
            wb!()
        ),
    ),
    // No keyword: the token has no fixed part. The lazy DFA scans 64 KiB in ~15 µs.
    regex(
        "discord_bot",
        &[],
        &[],
        concat!(
            wb!(),
            r"[MNO][A-Za-z0-9_-]{22,27}\.[A-Za-z0-9_-]{5,7}\.[A-Za-z0-9_-]{27,40}",
            wb!()
        ),
    ),
    // `SK` and 32 hex digits; "sk" is too common to be a keyword, and the case-sensitive
    // literal is cheap to search for.
    regex(
        "twilio",
        &["twilio-api-key"],
        &[],
        concat!(wb!(), r"SK[0-9a-fA-F]{32}", wb!()),
    ),
    // ---- Tokens of well-known shapes ---------------------------------------------------
    regex(
        "jwt",
        &["jwt"],
        &["eyj"],
        concat!(
            wb!(),
            r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*|",
            wb!(),
            r"eyJ[A-Za-z0-9_-]{17,}\.[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}"
        ),
    ),
    // A JWT encoded once more in base64: `ZXlK` (base64 of `eyJ`) and the encoding of one
    // of the usual first header fields (alg, typ, kid, cty, enc, zip, jku, jwk, x5t, x5u,
    // x5c, b64).
    regex(
        "jwt_base64",
        &["jwt-base64"],
        &["zxlk"],
        concat!(
            wb!(),
            r"ZXlK(?:aGJHY2lP|MGVYQWlP|cmFXUWlP|amRIa2lP|bGJtTWlP|NmFYQWlP|cWEzVWlP|cWQyc2lP|NE5YUWlP|NE5YVWlP|NE5XTWlP|aU5qUWlP)[A-Za-z0-9+/_-]{40,}={0,2}"
        ),
    ),
    regex(
        "mapbox",
        &["mapbox-api-token"],
        &["pk.", "sk."],
        concat!(
            wb!(),
            r"[ps]k\.[A-Za-z0-9_-]{50,}\.[A-Za-z0-9_-]{20,}",
            wb!()
        ),
    ),
    // ---- Credentials in URLs, headers and commands -------------------------------------
    // `scheme://user:password@host`: only the password is replaced. Passwords shorter
    // than 6 are placeholders like `:x@`; `${VAR}` and `<password>` stay readable.
    checked(
        "url_credentials",
        &[],
        &["://"],
        r"(?i)[a-z][a-z0-9+.-]*://[^:@/\s]*:([^@/\s]{6,})@",
        not_a_placeholder,
    ),
    checked(
        "sidekiq_url",
        &["sidekiq-sensitive-url"],
        &["contribsys.com"],
        r"(?i)https?://([a-f0-9]{8}:[a-f0-9]{8})@(?:gems|enterprise)\.contribsys\.com",
        always_true,
    ),
    keyed_checked(
        "authorization_header",
        &[],
        &["authorization"],
        r"(?i)authorization[ \t]*:[ \t]*(?:bearer|basic|token|api-token)[ \t]+([A-Za-z0-9+/=._~-]{16,})",
        not_a_placeholder,
    ),
    // `curl -H "Authorization: …"`, `-H 'X-Api-Key: …'`, `--header "Token: …"`.
    checked(
        "curl_header",
        &["curl-auth-header"],
        &["curl"],
        r#"(?i)(?:-H|--header)[= \t]*["']?(?:authorization:[ \t]*(?:(?:basic|bearer|token|api-token)[ \t]+)?|(?:x-(?:[a-z]+-)*)?(?:api-?)?(?:key|token|secret):[ \t]*)([A-Za-z0-9=~@.+/_-]{8,})"#,
        not_a_placeholder,
    ),
    // `curl -u user:password`, `--user "user:password"`: the password is replaced.
    checked(
        "curl_user",
        &["curl-auth-user"],
        &["curl"],
        r#"(?i)\bcurl\b(?:[^\n]|\\\n)*?[ \t](?:-u|--user)[= \t]*["']?(?:[^\s"':]{1,64}):([^\s"']{3,})"#,
        not_a_placeholder,
    ),
    keyed(
        "nuget_config_password",
        &["nuget-config-password"],
        &["<add"],
        r#"(?i)<add[ \t]+key=\\?"(?:ClearText)?Password\\?"[ \t]+value=\\?"([^"\\]{4,})\\?""#,
    ),
    // ---- Assignments: `password = …`, `api_key: …`, `export TOKEN=…` --------------------
    // Password-like keys (`password`, `passwd`, `pwd`, `passphrase`, `DB_PASS`): any value
    // that looks like a password, however short. See `password_value` for what counts.
    Rule {
        name: "password_assignment",
        covers: &["database-password", "hashicorp-tf-password"],
        keywords: &["pass", "pwd"],
        finder: Finder::Regex {
            regex: r#"(?i)(?P<key>passphrase|passcode|passw(?:or)?d|pwd|pass)(?P<suffix>[a-z0-9_.-]{0,24})(?:\\?["'`])?(?P<op>[ \t]*(?:=>|:=|=|:)|[ \t]+)[ \t]*(?:"((?:[^"\\\r\n]|\\[^\r\n])+)"|\\"([^"\\\r\n]+)\\"|'((?:[^'\\\r\n]|\\[^\r\n])+)'|`([^`\r\n]+)`|([^\s"'`,;&<>()\[\]{}\\]+))"#,
            check: Some(password_value),
            screen: Some(password_key_screen),
            at_keyword: true,
        },
    },
    // Other secret-looking keys: a quoted value of 8+ characters or an unquoted one of
    // 20+; only the value is replaced.
    keyed_checked(
        "secret_assignment",
        &[],
        &[
            "api_key",
            "api-key",
            "apikey",
            "api_secret",
            "api-secret",
            "apisecret",
            "api_token",
            "api-token",
            "apitoken",
            "auth_token",
            "auth-token",
            "authtoken",
            "access_token",
            "access-token",
            "accesstoken",
            "refresh_token",
            "refresh-token",
            "refreshtoken",
            "bearer_token",
            "bearer-token",
            "bearertoken",
            "client_secret",
            "client-secret",
            "clientsecret",
            "private_key",
            "private-key",
            "privatekey",
            "secret_key",
            "secret-key",
            "secretkey",
            "session_secret",
            "session-secret",
            "sessionsecret",
            "app_secret",
            "app-secret",
            "appsecret",
            "webhook_secret",
            "webhook-secret",
            "webhooksecret",
            "signing_secret",
            "signing-secret",
            "signingsecret",
            "encryption_key",
            "encryption-key",
            "encryptionkey",
        ],
        r#"(?i)(?:api[_-]?key|api[_-]?secret|api[_-]?token|auth[_-]?token|access[_-]?token|refresh[_-]?token|bearer[_-]?token|client[_-]?secret|private[_-]?key|secret[_-]?key|session[_-]?secret|app[_-]?secret|webhook[_-]?secret|signing[_-]?secret|encryption[_-]?key)(?:\\?["'`])?[ \t]*(?:=>|:=|=|:)[ \t]*(?:"((?:[^"\\\r\n]|\\[^\r\n]){8,})"|\\"([^"\\\r\n]{8,})\\"|'((?:[^'\\\r\n]|\\[^\r\n]){8,})'|`([^`\r\n]{8,})`|([^\s"'`,;&<>()\[\]{}\\][^\s"'`,;&<>()\[\]{}\\]{19,}))"#,
        not_a_placeholder,
    ),
    // `export GITHUB_TOKEN=…`, `MY_SECRET="…"`: upper-case names only, so ordinary code
    // like `token = next_token()` is left alone. The match starts at the keyword, which
    // lets the regex engine skip to it.
    keyed_checked(
        "env_assignment",
        &[],
        &["api_key", "apikey", "token", "secret", "credential"],
        r#"(?:API_?KEY|TOKEN|SECRET|CREDENTIAL)[A-Z0-9_]*[ \t]*=[ \t]*["'`]?([^\s"'`]{20,})"#,
        not_a_placeholder,
    ),
    checked(
        "freemius_secret_key",
        &["freemius-secret-key"],
        &["secret_key"],
        r#"(?i)\\?["']secret_key\\?["'][ \t]*=>[ \t]*\\?["'](sk_[^\s"'\\]{29})\\?["']"#,
        always_true,
    ),
    Rule {
        name: "kubernetes_secret",
        covers: &["kubernetes-secret-yaml"],
        keywords: &["secret"],
        finder: Finder::Custom(kubernetes_secret_values),
    },
    // ---- A vendor's name, an assignment, a value of the vendor's shape -------------------
    keyed(
        "adafruit",
        &["adafruit-api-key"],
        &["adafruit"],
        assigned!("adafruit", r"[a-z0-9_-]{32}"),
    ),
    keyed(
        "adobe_client_id",
        &["adobe-client-id"],
        &["adobe"],
        assigned!("adobe", r"[a-f0-9]{32}"),
    ),
    keyed(
        "airtable",
        &["airtable-api-key"],
        &["airtable"],
        assigned!("airtable", r"[a-z0-9]{17}|pat[a-z0-9]{14}\.[a-f0-9]{64}"),
    ),
    keyed(
        "algolia",
        &["algolia-api-key"],
        &["algolia"],
        assigned!("algolia", r"[a-z0-9]{32}"),
    ),
    keyed(
        "alibaba_secret",
        &["alibaba-secret-key"],
        &["alibaba"],
        assigned!("alibaba", r"[a-z0-9]{30}"),
    ),
    keyed(
        "asana",
        &["asana-client-id", "asana-client-secret"],
        &["asana"],
        assigned!("asana", r"[0-9]{16}|[a-z0-9]{32}"),
    ),
    keyed(
        "atlassian",
        &["atlassian-api-token"],
        &["atlassian", "confluence", "jira"],
        assigned!("atlassian|confluence|jira", r"[a-z0-9]{20}[a-f0-9]{4}"),
    ),
    keyed(
        "beamer",
        &["beamer-api-token"],
        &["beamer"],
        assigned!("beamer", r"b_[a-z0-9=_-]{44}"),
    ),
    keyed(
        "bitbucket",
        &["bitbucket-client-id", "bitbucket-client-secret"],
        &["bitbucket"],
        assigned!("bitbucket", r"[a-z0-9]{32}|[a-z0-9=_-]{64}"),
    ),
    keyed(
        "bittrex",
        &["bittrex-access-key", "bittrex-secret-key"],
        &["bittrex"],
        assigned!("bittrex", r"[a-z0-9]{32}"),
    ),
    keyed(
        "cisco_meraki",
        &["cisco-meraki-api-key"],
        &["meraki"],
        assigned!("meraki", r"[0-9a-f]{40}"),
    ),
    keyed(
        "cloudflare",
        &["cloudflare-api-key", "cloudflare-global-api-key"],
        &["cloudflare"],
        assigned!("cloudflare", r"[a-z0-9_-]{40}|[a-f0-9]{37}"),
    ),
    keyed(
        "codecov",
        &["codecov-access-token"],
        &["codecov"],
        assigned!("codecov", r"[a-z0-9]{32}"),
    ),
    keyed(
        "cohere",
        &["cohere-api-token"],
        &["cohere", "co_api_key"],
        assigned!("cohere|co_api_key", r"[a-z0-9]{40}"),
    ),
    keyed(
        "coinbase",
        &["coinbase-access-token"],
        &["coinbase"],
        assigned!("coinbase", r"[a-z0-9_-]{64}"),
    ),
    keyed(
        "confluent",
        &["confluent-access-token", "confluent-secret-key"],
        &["confluent"],
        assigned!("confluent", r"[a-z0-9]{16}|[a-z0-9]{64}"),
    ),
    keyed(
        "contentful",
        &["contentful-delivery-api-token"],
        &["contentful"],
        assigned!("contentful", r"[a-z0-9=_-]{43}"),
    ),
    keyed(
        "datadog",
        &["datadog-access-token"],
        &["datadog", "dd_api_key", "dd_app_key"],
        assigned!(
            "datadog|dd_api_key|dd_app_key",
            r"[a-z0-9]{40}|[a-f0-9]{32}"
        ),
    ),
    keyed(
        "discord",
        &[
            "discord-api-token",
            "discord-client-id",
            "discord-client-secret",
        ],
        &["discord"],
        assigned!("discord", r"[a-f0-9]{64}|[0-9]{18}|[a-z0-9=_-]{32}"),
    ),
    keyed(
        "droneci",
        &["droneci-access-token"],
        &["droneci"],
        assigned!("droneci", r"[a-z0-9]{32}"),
    ),
    keyed(
        "dropbox",
        &[
            "dropbox-api-token",
            "dropbox-long-lived-api-token",
            "dropbox-short-lived-api-token",
        ],
        &["dropbox"],
        assigned!(
            "dropbox",
            r"[a-z0-9]{15}|sl\.[a-z0-9=_-]{130,}|[a-z0-9]{11}AAAAAAAAAA[a-z0-9=_-]{43}"
        ),
    ),
    keyed(
        "etsy",
        &["etsy-access-token"],
        &["etsy"],
        assigned!("etsy", r"[a-z0-9]{24}"),
    ),
    keyed(
        "facebook_secret",
        &["facebook-secret"],
        &["facebook"],
        assigned!("facebook", r"[a-f0-9]{32}"),
    ),
    keyed(
        "fastly",
        &["fastly-api-token"],
        &["fastly"],
        assigned!("fastly", r"[a-z0-9=_-]{32}"),
    ),
    keyed(
        "finicity",
        &["finicity-api-token", "finicity-client-secret"],
        &["finicity"],
        assigned!("finicity", r"[a-f0-9]{32}|[a-z0-9]{20}"),
    ),
    keyed(
        "finnhub",
        &["finnhub-access-token"],
        &["finnhub"],
        assigned!("finnhub", r"[a-z0-9]{20}"),
    ),
    keyed(
        "flickr",
        &["flickr-access-token"],
        &["flickr"],
        assigned!("flickr", r"[a-z0-9]{32}"),
    ),
    keyed(
        "freshbooks",
        &["freshbooks-access-token"],
        &["freshbooks"],
        assigned!("freshbooks", r"[a-z0-9]{64}"),
    ),
    keyed(
        "gitter",
        &["gitter-access-token"],
        &["gitter"],
        assigned!("gitter", r"[a-z0-9_-]{40}"),
    ),
    keyed(
        "gocardless",
        &["gocardless-api-token"],
        &["gocardless"],
        assigned!("gocardless", r"live_[a-z0-9_=-]{40}"),
    ),
    keyed(
        "heroku",
        &["heroku-api-key"],
        &["heroku"],
        assigned!("heroku", uuid!()),
    ),
    keyed(
        "hubspot",
        &["hubspot-api-key"],
        &["hubspot"],
        assigned!("hubspot", uuid!()),
    ),
    keyed(
        "intercom",
        &["intercom-api-key"],
        &["intercom"],
        assigned!("intercom", r"[a-z0-9=_-]{60}"),
    ),
    keyed(
        "jfrog",
        &["jfrog-api-key", "jfrog-identity-token"],
        &["jfrog", "artifactory", "bintray", "xray"],
        assigned!(
            "jfrog|artifactory|bintray|xray",
            r"[a-z0-9]{73}|[a-z0-9]{64}"
        ),
    ),
    keyed(
        "kraken",
        &["kraken-access-token"],
        &["kraken"],
        assigned!("kraken", r"[a-z0-9/=_+-]{80,90}"),
    ),
    keyed(
        "kucoin",
        &["kucoin-access-token", "kucoin-secret-key"],
        &["kucoin"],
        assigned!("kucoin", concat!(r"[a-f0-9]{24}|", uuid!())),
    ),
    keyed(
        "launchdarkly",
        &["launchdarkly-access-token"],
        &["launchdarkly"],
        assigned!("launchdarkly", r"[a-z0-9=_-]{40}"),
    ),
    keyed(
        "linear_client_secret",
        &["linear-client-secret"],
        &["linear"],
        assigned!("linear", r"[a-f0-9]{32}"),
    ),
    keyed(
        "linkedin",
        &["linkedin-client-id", "linkedin-client-secret"],
        &["linkedin", "linked_in", "linked-in"],
        assigned!("linked[_-]?in", r"[a-z0-9]{14}|[a-z0-9]{16}"),
    ),
    keyed(
        "lob",
        &["lob-api-key", "lob-pub-api-key"],
        &["lob"],
        assigned!(
            "lob",
            r"(?:live|test)_[a-f0-9]{35}|(?:live|test)_pub_[a-f0-9]{31}"
        ),
    ),
    keyed(
        "mailchimp",
        &["mailchimp-api-key"],
        &["mailchimp"],
        assigned!("mailchimp", r"[a-f0-9]{32}-us[0-9]{1,2}"),
    ),
    keyed(
        "mailgun",
        &[
            "mailgun-private-api-token",
            "mailgun-pub-key",
            "mailgun-signing-key",
        ],
        &["mailgun"],
        assigned!(
            "mailgun",
            r"key-[a-f0-9]{32}|pubkey-[a-f0-9]{32}|[a-h0-9]{32}-[a-h0-9]{8}-[a-h0-9]{8}"
        ),
    ),
    keyed(
        "mattermost",
        &["mattermost-access-token"],
        &["mattermost"],
        assigned!("mattermost", r"[a-z0-9]{26}"),
    ),
    keyed(
        "messagebird",
        &["messagebird-api-token", "messagebird-client-id"],
        &["messagebird", "message-bird", "message_bird"],
        assigned!("message[_-]?bird", concat!(r"[a-z0-9]{25}|", uuid!())),
    ),
    keyed(
        "netlify",
        &["netlify-access-token"],
        &["netlify"],
        assigned!("netlify", r"[a-z0-9=_-]{40,46}"),
    ),
    keyed(
        "new_relic_user_api_id",
        &["new-relic-user-api-id"],
        &["new-relic", "newrelic", "new_relic"],
        assigned!("new[_-]?relic", r"[a-z0-9]{64}"),
    ),
    keyed(
        "nytimes",
        &["nytimes-access-token"],
        &["nytimes", "new-york-times", "newyorktimes"],
        assigned!("nytimes|new-york-times|newyorktimes", r"[a-z0-9=_-]{32}"),
    ),
    keyed(
        "okta",
        &["okta-access-token"],
        &["okta"],
        assigned!("okta", r"00[a-z0-9=_-]{40}"),
    ),
    keyed(
        "plaid",
        &["plaid-api-token", "plaid-client-id", "plaid-secret-key"],
        &["plaid"],
        assigned!(
            "plaid",
            concat!(
                r"access-(?:sandbox|development|production)-",
                uuid!(),
                r"|[a-z0-9]{24}|[a-z0-9]{30}"
            )
        ),
    ),
    keyed(
        "privateai",
        &["privateai-api-token"],
        &["privateai", "private_ai", "private-ai"],
        assigned!("private[_-]?ai", r"[a-z0-9]{32}"),
    ),
    keyed(
        "rapidapi",
        &["rapidapi-access-token"],
        &["rapidapi"],
        assigned!("rapidapi", r"[a-z0-9_-]{50}"),
    ),
    keyed(
        "sendbird",
        &["sendbird-access-id", "sendbird-access-token"],
        &["sendbird"],
        assigned!("sendbird", concat!(uuid!(), r"|[a-f0-9]{40}")),
    ),
    keyed(
        "sentry_access_token",
        &["sentry-access-token"],
        &["sentry"],
        assigned!("sentry", r"[a-f0-9]{64}"),
    ),
    keyed(
        "sidekiq_secret",
        &["sidekiq-secret"],
        &[
            "bundle_enterprise__contribsys__com",
            "bundle_gems__contribsys__com",
        ],
        assigned!(
            "bundle_enterprise__contribsys__com|bundle_gems__contribsys__com",
            r"[a-f0-9]{8}:[a-f0-9]{8}"
        ),
    ),
    keyed(
        "snyk",
        &["snyk-api-token"],
        &["snyk"],
        assigned!("snyk[_.-]?(?:(?:api|oauth)[_.-]?)?(?:key|token)", uuid!()),
    ),
    keyed(
        "sonar",
        &["sonar-api-token"],
        &["sonar"],
        assigned!(
            "sonar[_.-]?(?:login|token)",
            r"sq[upa]_[a-f0-9]{40}|[a-z0-9=_-]{40}"
        ),
    ),
    keyed(
        "sourcegraph_assigned",
        &["sourcegraph-access-token"],
        &["sourcegraph"],
        assigned!("sourcegraph", r"[a-f0-9]{40}"),
    ),
    keyed(
        "squarespace",
        &["squarespace-access-token"],
        &["squarespace"],
        assigned!("squarespace", uuid!()),
    ),
    keyed(
        "sumologic",
        &["sumologic-access-id", "sumologic-access-token"],
        &["sumo"],
        assigned!("sumo", r"su[a-z0-9]{12}|[a-z0-9]{64}"),
    ),
    keyed(
        "travisci",
        &["travisci-access-token"],
        &["travis"],
        assigned!("travis", r"[a-z0-9]{22}"),
    ),
    keyed(
        "twitch",
        &["twitch-api-token"],
        &["twitch"],
        assigned!("twitch", r"[a-z0-9]{30}"),
    ),
    keyed(
        "twitter",
        &[
            "twitter-access-secret",
            "twitter-access-token",
            "twitter-api-key",
            "twitter-api-secret",
            "twitter-bearer-token",
        ],
        &["twitter"],
        assigned!(
            "twitter",
            r"[a-z0-9]{25}|[a-z0-9]{45}|[a-z0-9]{50}|[0-9]{15,25}-[a-z0-9]{20,40}|A{22}[a-z0-9%]{80,100}"
        ),
    ),
    keyed(
        "yandex",
        &[
            "yandex-access-token",
            "yandex-api-key",
            "yandex-aws-access-token",
        ],
        &["yandex"],
        assigned!(
            "yandex",
            r"t1\.[a-z0-9_-]+={0,2}\.[a-z0-9_-]{86}={0,2}|AQVN[a-z0-9_-]{35,38}|YC[a-z0-9_-]{38}"
        ),
    ),
    keyed(
        "zendesk",
        &["zendesk-secret-key"],
        &["zendesk"],
        assigned!("zendesk", r"[a-z0-9]{40}"),
    ),
];

// ---- Checks -------------------------------------------------------------------------------

fn always_true(_: &str, _: &Captures<'_>, _: Range<usize>) -> bool {
    true
}

/// Vault's legacy tokens mix upper case, lower case and digits; a 24-letter word after
/// `s.` (`s.ReadOnlyCollectionsLookup`) is not one.
fn mixed_case_with_digit(text: &str, _: &Captures<'_>, secret: Range<usize>) -> bool {
    let token = &text.as_bytes()[secret];
    token.iter().any(u8::is_ascii_digit)
        && token.iter().any(u8::is_ascii_uppercase)
        && token.iter().any(u8::is_ascii_lowercase)
}

/// Words that stand in for a value in examples and templates.
const PLACEHOLDER_WORDS: &[&str] = &[
    "changeme",
    "change_me",
    "change-me",
    "changeit",
    "password",
    "passwd",
    "pass",
    "secret",
    "token",
    "apikey",
    "api_key",
    "example",
    "sample",
    "dummy",
    "placeholder",
    "redacted",
    "none",
    "null",
    "nil",
    "undefined",
    "true",
    "false",
    "yes",
    "no",
    "empty",
    "required",
    "optional",
    "string",
    "str",
    "todo",
    "tbd",
    "fixme",
    "test",
    "default",
    "hidden",
    "masked",
];

/// True for values that stand in for a secret rather than being one: `[REDACTED]`,
/// template references (`${DB_PASSWORD}`, `{{ .Values.pw }}`, `%(pw)s`, `$PW`,
/// `<your-password>`), runs of one character (`xxx`, `****`, `...`), `your_token_here`,
/// and the words of [`PLACEHOLDER_WORDS`].
pub(crate) fn is_placeholder(value: &str) -> bool {
    let value = value.trim();
    let lower = value.to_ascii_lowercase();
    if value.is_empty() || value.contains(REDACTED) {
        return true;
    }
    let first = value.as_bytes()[0];
    let bytes = value.as_bytes();
    if bytes.iter().all(|b| *b == first) {
        return true;
    }
    if value.contains("${")
        || value.contains("{{")
        || value.contains("#{")
        || value.contains("%(")
        || (first == b'$'
            && bytes
                .get(1)
                .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_' || *b == b'{' || *b == b'('))
        || (first == b'<' && value.ends_with('>'))
        || (first == b'%' && value.ends_with('%'))
        || (first == b'{' && value.ends_with('}'))
    {
        return true;
    }
    if lower.contains("your_")
        || lower.contains("your-")
        || lower.starts_with("your")
        || lower.ends_with("_here")
        || lower.ends_with("-here")
    {
        return true;
    }
    PLACEHOLDER_WORDS.contains(&lower.as_str())
}

/// The character right after the secret, if any.
fn char_after(text: &str, secret: &Range<usize>) -> Option<char> {
    text[secret.end..].chars().next()
}

/// True when the secret's value was written in quotes.
fn is_quoted(text: &str, secret: &Range<usize>) -> bool {
    secret.start > 0 && matches!(text.as_bytes()[secret.start - 1], b'"' | b'\'' | b'`')
}

/// `self.password`, `config.db.pw`, `Secret::new`: a path of identifiers, i.e. code. A
/// segment with two digits and both cases (`AbC9x2…`) looks random, which code does not.
fn is_identifier_path(value: &str) -> bool {
    if !(value.contains('.') || value.contains("::")) {
        return false;
    }
    value.replace("::", ".").split('.').all(|segment| {
        let bytes = segment.as_bytes();
        let identifier = !bytes.is_empty()
            && (bytes[0].is_ascii_alphabetic() || bytes[0] == b'_')
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'_');
        let random = bytes.iter().filter(|b| b.is_ascii_digit()).count() >= 2
            && bytes.iter().any(u8::is_ascii_uppercase)
            && bytes.iter().any(u8::is_ascii_lowercase);
        identifier && !random
    })
}

/// Rejects placeholders and, for unquoted values, what is code rather than a value: a
/// reference (`$VAR`, `%VAR%`, `@var`), a path of identifiers or a call (`get_key()`,
/// `os.environ[…]`).
fn not_a_placeholder(text: &str, _: &Captures<'_>, secret: Range<usize>) -> bool {
    let value = &text[secret.clone()];
    if is_placeholder(value) {
        return false;
    }
    if is_quoted(text, &secret) {
        return true;
    }
    !looks_like_code(text, value, &secret)
}

fn looks_like_code(text: &str, value: &str, secret: &Range<usize>) -> bool {
    let first = value.as_bytes()[0];
    matches!(
        first,
        b'$' | b'%' | b'@' | b'{' | b'<' | b'[' | b'(' | b'\\' | b'=' | b'*' | b'&' | b'-'
    ) || matches!(char_after(text, secret), Some('(' | '[' | '{'))
        || is_identifier_path(value)
}

/// Words in a password key's suffix that make it about a password rather than one:
/// `password_hint`, `passwordFile`, `PASSWORD_MIN_LENGTH`, `password_reset_url`, ….
const NOT_A_PASSWORD_KEY: &[&str] = &[
    "hint",
    "file",
    "path",
    "dir",
    "length",
    "len",
    "size",
    "min",
    "max",
    "minlength",
    "maxlength",
    "prompt",
    "label",
    "placeholder",
    "field",
    "input",
    "regex",
    "pattern",
    "policy",
    "rule",
    "rules",
    "validator",
    "validation",
    "valid",
    "strength",
    "env",
    "var",
    "variable",
    "command",
    "cmd",
    "url",
    "uri",
    "link",
    "type",
    "format",
    "expires",
    "expiry",
    "expiration",
    "expire",
    "age",
    "count",
    "attempt",
    "attempts",
    "required",
    "enabled",
    "enable",
    "disabled",
    "auth",
    "authentication",
    "manager",
    "store",
    "changed",
    "change",
    "last",
    "updated",
    "visible",
    "visibility",
    "toggle",
    "show",
    "hidden",
    "mode",
    "error",
    "message",
    "msg",
    "text",
    "title",
    "help",
    "description",
    "desc",
    "id",
    "name",
    "reset",
    "less",
    "through",
    "word",
];

/// True when a word of an identifier suffix is in [`NOT_A_PASSWORD_KEY`]. Words are split
/// at `_`, `-`, `.` and before an upper-case letter that follows a lower-case one
/// (`passwordHintText` → hint, text); no allocation.
fn suffix_is_about_a_password(suffix: &str) -> bool {
    let bytes = suffix.as_bytes();
    let mut start = 0;
    for end in 0..=bytes.len() {
        let boundary = end == bytes.len()
            || matches!(bytes[end], b'_' | b'-' | b'.')
            || (end > start
                && bytes[end].is_ascii_uppercase()
                && bytes[end - 1].is_ascii_lowercase());
        if !boundary {
            continue;
        }
        let word = &suffix[start..end];
        if !word.is_empty()
            && NOT_A_PASSWORD_KEY
                .iter()
                .any(|listed| listed.eq_ignore_ascii_case(word))
        {
            return true;
        }
        start = if end < bytes.len() && matches!(bytes[end], b'_' | b'-' | b'.') {
            end + 1
        } else {
            end
        };
    }
    false
}

/// The password keys, in the order the rule's alternation tries them.
const PASSWORD_KEYS: &[&str] = &[
    "passphrase",
    "passcode",
    "password",
    "passwd",
    "pwd",
    "pass",
];

/// Whether the key at `key` (with the name characters that follow it) names a password:
/// `pass` and `pwd` only as a whole segment (`DB_PASS`, not `bypass`, `OLDPWD`,
/// `passes`), and no suffix about a password rather than one (`password_hint`).
fn is_password_key(text: &str, key: Range<usize>, suffix: &str) -> bool {
    let key_text = &text[key.clone()];
    if key_text.eq_ignore_ascii_case("pass") || key_text.eq_ignore_ascii_case("pwd") {
        let before = text[..key.start].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphabetic()) {
            return false;
        }
        if !suffix.is_empty() && !suffix.starts_with(['_', '-', '.']) {
            return false;
        }
    }
    !suffix_is_about_a_password(suffix)
}

/// The password rule's screen: the key test of [`password_value`] on the bare match, so
/// that the many `password_hint = …` look-alikes are turned away before any capture group
/// is computed (that costs about a microsecond a match).
fn password_key_screen(text: &str, found: Range<usize>) -> bool {
    let matched = text[found.clone()].as_bytes();
    let Some(key_len) = PASSWORD_KEYS
        .iter()
        .find(|key| {
            matched.len() >= key.len() && matched[..key.len()].eq_ignore_ascii_case(key.as_bytes())
        })
        .map(|key| key.len())
    else {
        return false;
    };
    let suffix_len = matched[key_len..]
        .iter()
        .take(24)
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        .count();
    let suffix = &text[found.start + key_len..found.start + key_len + suffix_len];
    is_password_key(text, found.start..found.start + key_len, suffix)
}

/// The password rule's judgement. A value counts as a password unless:
///
/// - the key is not a password key: `bypass`, `OLDPWD`, `passes` (`pass` and `pwd` count
///   only as a whole segment like `DB_PASS`, `db-pwd`), or it is about a password rather
///   than one (`password_hint`, `passwordFile`, see [`NOT_A_PASSWORD_KEY`]);
/// - a flag without `=` is not `--password value` (so prose like "the password is x" is
///   left alone);
/// - the value is shorter than 4 characters, or a placeholder (see [`is_placeholder`]);
/// - quoted, it is a label rather than a value ("Enter the password");
/// - unquoted, it is code: a reference, a call, a type (`String`, `&str`,
///   `Option<String>`), a path of identifiers (`self.password`), or a plain word of
///   letters (`password=password`, `password: String`). A plain word still counts in the
///   dotenv form `DB_PASSWORD=supersecret` (upper-case key, `=` with no spaces).
fn password_value(text: &str, caps: &Captures<'_>, secret: Range<usize>) -> bool {
    // By index (a unit test checks that these are the `key`, `suffix` and `op` groups).
    let (Some(key), Some(suffix), Some(op)) = (caps.get(1), caps.get(2), caps.get(3)) else {
        return false;
    };
    if !is_password_key(text, key.range(), suffix.as_str()) {
        return false;
    }
    let op_text = op.as_str();
    if op_text.trim().is_empty() && !text[..key.start()].ends_with("--") {
        return false;
    }
    let value = &text[secret.clone()];
    if value.chars().count() < 4 || is_placeholder(value) {
        return false;
    }
    if is_quoted(text, &secret) {
        let lower = value.to_ascii_lowercase();
        return !(value.contains(' ') && lower.contains("passw"));
    }
    if looks_like_code(text, value, &secret) || value.starts_with(['/', '.', '~', ':', '?', '!']) {
        return false;
    }
    let has_digit_or_symbol = value
        .bytes()
        .any(|b| !(b.is_ascii_alphabetic() || b == b'_'));
    if has_digit_or_symbol {
        return true;
    }
    let key_is_upper = key.as_str().bytes().all(|b| b.is_ascii_uppercase());
    key_is_upper && op_text == "="
}

// ---- Kubernetes secrets -------------------------------------------------------------------

/// Words after which a secret may come that only later text shows to be one: a Kubernetes
/// Secret's values, which `kubectl` prints before the `kind: Secret` that makes them secret
/// (lower-case ASCII, found in any case). A stream holds text back while one is in view.
pub(crate) const LATE_CONTEXT: &[&str] = &["data:", "\"data\"", "stringdata"];

/// The values under `data:` / `stringData:` of a Kubernetes `Secret`, in YAML (each
/// document that says `kind: Secret`) and in JSON (`kubectl get secret -o json`).
fn kubernetes_secret_values(text: &str, spans: &mut Vec<Range<usize>>) {
    let mut document_start = 0;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "---" {
            yaml_secret_values(text, document_start..offset, spans);
            document_start = offset + line.len();
        }
        offset += line.len();
    }
    yaml_secret_values(text, document_start..text.len(), spans);
    json_secret_values(text, spans);
}

fn yaml_is_secret_kind(document: &str) -> bool {
    document.lines().any(|line| {
        let line = line.trim();
        line.strip_prefix("kind:").is_some_and(|kind| {
            kind.trim()
                .trim_matches(['"', '\''])
                .eq_ignore_ascii_case("secret")
        })
    })
}

fn indentation(line: &str) -> usize {
    line.len() - line.trim_start_matches([' ', '\t']).len()
}

fn yaml_secret_values(text: &str, document: Range<usize>, spans: &mut Vec<Range<usize>>) {
    let body = &text[document.clone()];
    if !yaml_is_secret_kind(body) {
        return;
    }
    // (indentation of the `data:` line) while inside a data block.
    let mut data_indent: Option<usize> = None;
    // (indentation of a `key: |` line) while inside a block scalar value.
    let mut block_indent: Option<usize> = None;
    let mut offset = document.start;
    for line in body.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let content = line.trim_end_matches(['\r', '\n']);
        let trimmed = content.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = indentation(content);
        if let Some(parent) = block_indent {
            if indent > parent {
                spans.push(start + indent..start + content.len());
                continue;
            }
            block_indent = None;
        }
        if let Some(parent) = data_indent {
            if indent <= parent {
                data_indent = None;
            } else if let Some((key, value)) = trimmed.split_once(':') {
                let value_text = value.trim();
                let key_ok = !key.is_empty() && !key.contains(' ');
                if key_ok && matches!(value_text.chars().next(), Some('|' | '>')) {
                    block_indent = Some(indent);
                } else if key_ok && !value_text.is_empty() {
                    let value_start = start + content.len() - value.trim_start().len();
                    let value_text = value_text.trim_matches(['"', '\'']);
                    if !value_text.is_empty() && !is_placeholder(value_text) {
                        let inner = content[content.len() - value.trim_start().len()..]
                            .find(value_text)
                            .unwrap_or(0);
                        let from = value_start + inner;
                        spans.push(from..from + value_text.len());
                    }
                }
                continue;
            }
        }
        if trimmed == "data:" || trimmed == "stringData:" {
            data_indent = Some(indent);
        }
    }
}

fn json_secret_values(text: &str, spans: &mut Vec<Range<usize>>) {
    use std::sync::LazyLock;
    static KIND: LazyLock<Option<regex::Regex>> =
        LazyLock::new(|| regex::Regex::new(r#"\\?"kind\\?"[ \t]*:[ \t]*\\?"Secret\\?""#).ok());
    static DATA: LazyLock<Option<regex::Regex>> = LazyLock::new(|| {
        regex::Regex::new(r#"\\?"(?:data|stringData)\\?"\s*:\s*\{([^{}]*)\}"#).ok()
    });
    static ENTRY: LazyLock<Option<regex::Regex>> =
        LazyLock::new(|| regex::Regex::new(r#"\\?"[^"\\]*\\?"\s*:\s*\\?"([^"\\]*)\\?""#).ok());
    let (Some(kind), Some(data), Some(entry)) = (&*KIND, &*DATA, &*ENTRY) else {
        return;
    };
    if !kind.is_match(text) {
        return;
    }
    for block in data.captures_iter(text) {
        let Some(body) = block.get(1) else { continue };
        for pair in entry.captures_iter(body.as_str()) {
            if let Some(value) = pair.get(1)
                && !value.as_str().is_empty()
            {
                spans.push(body.start() + value.start()..body.start() + value.end());
            }
        }
    }
}

// ---- Coverage of the pinned gitleaks rules ----------------------------------------------------

/// Every rule id of gitleaks' default config at [`GITLEAKS_COMMIT`] (218 rules).
#[cfg(test)]
pub(crate) const GITLEAKS_RULE_IDS: &[&str] = &[
    "1password-secret-key",
    "1password-service-account-token",
    "adafruit-api-key",
    "adobe-client-id",
    "adobe-client-secret",
    "age-secret-key",
    "airtable-api-key",
    "algolia-api-key",
    "alibaba-access-key-id",
    "alibaba-secret-key",
    "anthropic-admin-api-key",
    "anthropic-api-key",
    "artifactory-api-key",
    "artifactory-reference-token",
    "asana-client-id",
    "asana-client-secret",
    "atlassian-api-token",
    "authress-service-client-access-key",
    "aws-access-token",
    "azure-ad-client-secret",
    "beamer-api-token",
    "bitbucket-client-id",
    "bitbucket-client-secret",
    "bittrex-access-key",
    "bittrex-secret-key",
    "cisco-meraki-api-key",
    "clickhouse-cloud-api-secret-key",
    "clojars-api-token",
    "cloudflare-api-key",
    "cloudflare-global-api-key",
    "cloudflare-origin-ca-key",
    "codecov-access-token",
    "cohere-api-token",
    "coinbase-access-token",
    "confluent-access-token",
    "confluent-secret-key",
    "contentful-delivery-api-token",
    "curl-auth-header",
    "curl-auth-user",
    "database-password",
    "databricks-api-token",
    "datadog-access-token",
    "defined-networking-api-token",
    "digitalocean-access-token",
    "digitalocean-pat",
    "digitalocean-refresh-token",
    "discord-api-token",
    "discord-client-id",
    "discord-client-secret",
    "doppler-api-token",
    "droneci-access-token",
    "dropbox-api-token",
    "dropbox-long-lived-api-token",
    "dropbox-short-lived-api-token",
    "duffel-api-token",
    "dynatrace-api-token",
    "easypost-api-token",
    "easypost-test-api-token",
    "etsy-access-token",
    "facebook-access-token",
    "facebook-page-access-token",
    "facebook-secret",
    "fastly-api-token",
    "finicity-api-token",
    "finicity-client-secret",
    "finnhub-access-token",
    "flickr-access-token",
    "flutterwave-encryption-key",
    "flutterwave-public-key",
    "flutterwave-secret-key",
    "flyio-access-token",
    "frameio-api-token",
    "freemius-secret-key",
    "freshbooks-access-token",
    "gcp-api-key",
    "generic-api-key",
    "github-app-token",
    "github-fine-grained-pat",
    "github-oauth",
    "github-pat",
    "github-refresh-token",
    "gitlab-cicd-job-token",
    "gitlab-deploy-token",
    "gitlab-feature-flag-client-token",
    "gitlab-feed-token",
    "gitlab-incoming-mail-token",
    "gitlab-kubernetes-agent-token",
    "gitlab-oauth-app-secret",
    "gitlab-pat",
    "gitlab-pat-routable",
    "gitlab-ptt",
    "gitlab-rrt",
    "gitlab-runner-authentication-token",
    "gitlab-runner-authentication-token-routable",
    "gitlab-scim-token",
    "gitlab-session-cookie",
    "gitter-access-token",
    "gocardless-api-token",
    "grafana-api-key",
    "grafana-cloud-api-token",
    "grafana-service-account-token",
    "harness-api-key",
    "hashicorp-tf-api-token",
    "hashicorp-tf-password",
    "heroku-api-key",
    "heroku-api-key-v2",
    "hubspot-api-key",
    "huggingface-access-token",
    "huggingface-organization-api-token",
    "infracost-api-token",
    "intercom-api-key",
    "intra42-client-secret",
    "jfrog-api-key",
    "jfrog-identity-token",
    "jwt",
    "jwt-base64",
    "kraken-access-token",
    "kubernetes-secret-yaml",
    "kucoin-access-token",
    "kucoin-secret-key",
    "launchdarkly-access-token",
    "linear-api-key",
    "linear-client-secret",
    "linkedin-client-id",
    "linkedin-client-secret",
    "lob-api-key",
    "lob-pub-api-key",
    "mailchimp-api-key",
    "mailgun-private-api-token",
    "mailgun-pub-key",
    "mailgun-signing-key",
    "mapbox-api-token",
    "mattermost-access-token",
    "maxmind-license-key",
    "messagebird-api-token",
    "messagebird-client-id",
    "microsoft-teams-webhook",
    "netlify-access-token",
    "new-relic-browser-api-token",
    "new-relic-insert-key",
    "new-relic-user-api-id",
    "new-relic-user-api-key",
    "notion-api-token",
    "npm-access-token",
    "nuget-config-password",
    "nytimes-access-token",
    "octopus-deploy-api-key",
    "okta-access-token",
    "openai-api-key",
    "openshift-user-token",
    "perplexity-api-key",
    "pkcs12-file",
    "plaid-api-token",
    "plaid-client-id",
    "plaid-secret-key",
    "planetscale-api-token",
    "planetscale-oauth-token",
    "planetscale-password",
    "postman-api-token",
    "prefect-api-token",
    "private-key",
    "privateai-api-token",
    "pulumi-api-token",
    "pypi-upload-token",
    "rapidapi-access-token",
    "readme-api-token",
    "rubygems-api-token",
    "scalingo-api-token",
    "sendbird-access-id",
    "sendbird-access-token",
    "sendgrid-api-token",
    "sendinblue-api-token",
    "sentry-access-token",
    "sentry-org-token",
    "sentry-user-token",
    "settlemint-application-access-token",
    "settlemint-personal-access-token",
    "settlemint-service-access-token",
    "shippo-api-token",
    "shopify-access-token",
    "shopify-custom-access-token",
    "shopify-private-app-access-token",
    "shopify-shared-secret",
    "sidekiq-secret",
    "sidekiq-sensitive-url",
    "slack-app-token",
    "slack-bot-token",
    "slack-config-access-token",
    "slack-config-refresh-token",
    "slack-legacy-bot-token",
    "slack-legacy-token",
    "slack-legacy-workspace-token",
    "slack-user-token",
    "slack-webhook-url",
    "snyk-api-token",
    "sonar-api-token",
    "sourcegraph-access-token",
    "square-access-token",
    "squarespace-access-token",
    "stripe-access-token",
    "sumologic-access-id",
    "sumologic-access-token",
    "telegram-bot-api-token",
    "travisci-access-token",
    "twilio-api-key",
    "twitch-api-token",
    "twitter-access-secret",
    "twitter-access-token",
    "twitter-api-key",
    "twitter-api-secret",
    "twitter-bearer-token",
    "typeform-api-token",
    "vault-batch-token",
    "vault-service-token",
    "yandex-access-token",
    "yandex-api-key",
    "yandex-aws-access-token",
    "zendesk-secret-key",
];

/// Pinned gitleaks rules with no rule here, and why.
#[cfg(test)]
pub(crate) const GITLEAKS_LEFT_OUT: &[(&str, &str)] = &[
    (
        "generic-api-key",
        "entropy-only: any `key|token|secret|password…` assignment whose value has enough entropy; \
         the assignment rules here cover the usual key names with fixed length thresholds instead",
    ),
    (
        "pkcs12-file",
        "matches a file name (`*.p12`, `*.pfx`), not text; such files are binary and read_file refuses them",
    ),
];
