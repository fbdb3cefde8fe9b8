"""Secret formats as data (STYLE.md rule 19): one row per family, with the keywords without which
it cannot occur, the pattern that finds it, and the shape of a real one. Stdlib only: the hook
reads it.

A row's pattern is masked whole, or only its `secret` group when it has one. The patterns of
families found at a word start begin with no `\\b`, which would make the search try every place
instead of looking for the literal: a match that starts with a letter or digit counts only after
no letter nor digit.
A keyword is looked for in the lowercased text: one made of a word and a separator (`glrt-`,
`dop_v1_`, `sg.`) where a word starts, and then the family matches only where a word starts;
any other keyword, or one marked `*` (a prefix distinctive enough to count glued to other text),
anywhere, and the family's pattern says where it may match. The families follow the default rules
of the common secret scanners, prefixed formats first.

An example is what such a secret looks like, written as a shape so that no real-looking secret
sits in the source: `{a20}` stands for 20 characters of one alphabet (`a` letters and digits,
`l` lowercase letters and digits, `u` uppercase letters and digits, `L` lowercase letters, `h`
lowercase hex, `d` digits, `w` letters, digits, `_` and `-`, `b` base64). The secret is the whole
example, or the part between `«` and `»`.
"""

from __future__ import annotations

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_UUID_SHAPE = "{h8}-{h4}-{h4}-{h4}-{h12}"
# What a secret of the expect scripts follows: a prompt for one, quoted, which names it within
# its first 200 characters (looked ahead for, then taken whole and never given back: a scan
# that failed is not restarted inside the same prompt).
_PROMPT = (
    r"\"(?=[^\"\n]{0,200}?(?:assw|phrase|[Pp][Ii][Nn]\b|[Tt]oken|[Ss]ecret|OTP|[Cc]ode))"
    r"[^\"\n]{0,240}+\""
)

# (family, keywords, pattern, example)
FAMILIES: tuple[tuple[str, tuple[str, ...], str, str], ...] = (
    # AI providers
    ("OpenAI", ("sk-",), r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}", "sk-proj-{w48}"),
    ("Anthropic", ("sk-",), r"sk-ant-(?:api|admin|oat)\d\d-[\w-]{20,}", "sk-ant-api03-{w93}"),
    ("OpenRouter", ("sk-",), r"sk-or-v1-[a-f0-9]{64}", "sk-or-v1-{h64}"),
    ("Groq", ("gsk_",), r"gsk_[A-Za-z0-9]{48,}", "gsk_{a52}"),
    ("xAI", ("xai-",), r"xai-[A-Za-z0-9]{48,}", "xai-{a80}"),
    ("Replicate", ("r8_",), r"r8_[A-Za-z0-9]{32,}", "r8_{a37}"),
    ("Perplexity", ("pplx-",), r"pplx-[A-Za-z0-9]{40,}", "pplx-{a48}"),
    ("Hugging Face", ("*hf_",), r"hf_[A-Za-z0-9]{30,}", "hf_{a34}"),
    ("Hugging Face organisation", ("api_org_",), r"api_org_[A-Za-z]{30,}", "api_org_{L34}"),
    ("ElevenLabs", ("sk_",), r"sk_[a-f0-9]{48}\b", "sk_{h48}"),
    ("Pinecone", ("pcsk_",), r"pcsk_[A-Za-z0-9_]{40,}", "pcsk_{a6}_{a63}"),
    ("LangSmith", ("lsv2_",), r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}", "lsv2_pt_{h32}_{h10}"),
    # Google, Amazon, Microsoft, other clouds
    ("Google OAuth access token", ("ya29.",), r"ya29\.[\w-]{30,}", "ya29.{w120}"),
    ("Google API key", ("aiza",), r"\bAIza[\w-]{35}", "AIza{w35}"),
    ("Google OAuth client secret", ("gocspx-",), r"GOCSPX-[\w-]{28}", "GOCSPX-{w28}"),
    (
        "AWS access key",
        ("akia", "asia"),
        r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",
        "AKIA{u16}",
    ),
    (
        "Microsoft Entra client secret",
        ("q~",),
        r"(?<![\w~.-])[\w~.]{3}\dQ~[\w~.-]{31,34}",
        "{a3}8Q~{a34}",
    ),
    (
        "Microsoft Teams webhook",
        ("webhook.",),
        r"https://[\w-]+\.webhook\.office\.com/webhookb2/[^\s'\"]+",
        f"https://acme.webhook.office.com/webhookb2/{_UUID_SHAPE}/IncomingWebhook/{{h32}}",
    ),
    ("DigitalOcean token", ("dop_v1_",), r"dop_v1_[a-f0-9]{64}", "dop_v1_{h64}"),
    ("DigitalOcean OAuth token", ("doo_v1_",), r"doo_v1_[a-f0-9]{64}", "doo_v1_{h64}"),
    ("DigitalOcean refresh token", ("dor_v1_",), r"dor_v1_[a-f0-9]{64}", "dor_v1_{h64}"),
    ("Heroku", ("hrku-",), r"HRKU-[\w-]{36,}", "HRKU-AA{w58}"),
    (
        "Fly.io",
        ("fo1_", "fm1a_", "fm1r_", "fm2_"),
        r"(?:fo1_[\w-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3})",
        "fo1_{w43}",
    ),
    (
        "Doppler",
        ("dp.",),
        r"dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[\w-]{1,40}\.)?[A-Za-z0-9]{40,}",
        "dp.st.prd.{a43}",
    ),
    ("PlanetScale password", ("pscale_pw_",), r"pscale_pw_[\w=.-]{32,64}", "pscale_pw_{w43}"),
    ("PlanetScale token", ("pscale_tkn_",), r"pscale_tkn_[\w=.-]{32,64}", "pscale_tkn_{w43}"),
    (
        "PlanetScale OAuth token",
        ("pscale_oauth_",),
        r"pscale_oauth_[\w=.-]{32,64}",
        "pscale_oauth_{w43}",
    ),
    ("Databricks", ("dapi",), r"\bdapi[a-f0-9]{32}(?:-\d)?\b", "dapi{h32}"),
    ("Pulumi", ("pul-",), r"pul-[a-f0-9]{40}", "pul-{h40}"),
    (
        "Terraform Cloud",
        ("atlasv1.",),
        r"[A-Za-z0-9]{14}\.atlasv1\.[\w=-]{60,70}",
        "{a14}.atlasv1.{w67}",
    ),
    ("Vault service token", ("hvs.",), r"hvs\.[\w-]{24,}", "hvs.{w90}"),
    ("Vault batch token", ("hvb.",), r"hvb\.[\w-]{24,}", "hvb.{w138}"),
    ("Vault recovery token", ("hvr.",), r"hvr\.[\w-]{24,}", "hvr.{w90}"),
    (
        "Vault legacy token",
        ("s.", "b."),
        r"[sb]\.(?=[A-Za-z]*\d)[A-Za-z0-9]{24}\b",
        "s.{a8}7{a15}",
    ),
    ("Infracost", ("ico-",), r"ico-[A-Za-z0-9]{32}", "ico-{a32}"),
    ("Scalingo", ("tk-",), r"tk-us-[\w-]{48}", "tk-us-{w48}"),
    (
        "Cloudflare origin CA key",
        ("v1.",),
        r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}",
        "v1.0-{h24}-{h146}",
    ),
    ("Octopus Deploy", ("api-",), r"API-[A-Z0-9]{26}\b", "API-{u26}"),
    ("Grafana Cloud", ("glc_",), r"glc_[A-Za-z0-9+/]{32,400}={0,3}", "glc_{a48}"),
    (
        "Grafana service account",
        ("glsa_",),
        r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}",
        "glsa_{a32}_{h8}",
    ),
    ("Grafana API key", ("eyj",), r"eyJrIjoi[A-Za-z0-9]{70,400}={0,3}", "eyJrIjoi{a80}"),
    (
        "Sentry organisation token",
        ("sntrys_",),
        r"sntrys_[A-Za-z0-9+/=_]{60,}",
        "sntrys_eyJpYXQiO{a80}_{a43}",
    ),
    ("Sentry user token", ("sntryu_",), r"sntryu_[a-f0-9]{64}", "sntryu_{h64}"),
    ("Honeycomb", ("hcaik_",), r"hcaik_[a-z0-9]{58,}", "hcaik_{l58}"),
    ("Neon", ("napi_",), r"napi_[a-z0-9]{60,}", "napi_{l64}"),
    ("Supabase", ("sbp_",), r"sbp_[a-f0-9]{40}", "sbp_{h40}"),
    ("Supabase secret key", ("sb_secret_",), r"sb_secret_[\w-]{20,}", "sb_secret_{w31}"),
    ("Render", ("rnd_",), r"rnd_[A-Za-z0-9]{32}", "rnd_{a32}"),
    ("Netlify", ("nfp_",), r"nfp_[A-Za-z0-9]{36,}", "nfp_{a40}"),
    ("Tailscale", ("tskey-",), r"tskey-[A-Za-z0-9-]{30,}", "tskey-auth-{a17}-{a33}"),
    (
        "age",
        ("age-",),
        r"AGE-SECRET-KEY-1[0-9A-Z]{58}",
        "AGE-SECRET-KEY-1{u58}",
    ),
    # Source hosting and CI
    ("GitHub token", ("*ghp_",), r"ghp_[A-Za-z0-9]{20,}", "ghp_{a36}"),
    ("GitHub OAuth token", ("*gho_",), r"gho_[A-Za-z0-9]{20,}", "gho_{a36}"),
    ("GitHub user-to-server token", ("*ghu_",), r"ghu_[A-Za-z0-9]{20,}", "ghu_{a36}"),
    ("GitHub server-to-server token", ("*ghs_",), r"ghs_[A-Za-z0-9]{20,}", "ghs_{a36}"),
    ("GitHub refresh token", ("*ghr_",), r"ghr_[A-Za-z0-9]{20,}", "ghr_{a36}"),
    (
        "GitHub fine-grained token",
        ("*github_pat_",),
        r"github_pat_\w{20,}",
        "github_pat_{a22}_{a59}",
    ),
    ("GitLab token", ("*glpat-",), r"glpat-[\w.-]{20,}", "glpat-{w20}"),
    ("GitLab pipeline trigger", ("glptt-",), r"glptt-[a-f0-9]{40}", "glptt-{h40}"),
    ("GitLab runner token", ("glrt-",), r"glrt-[\w.-]{20,}", "glrt-{w20}"),
    ("GitLab deploy token", ("gldt-",), r"gldt-[\w-]{20,}", "gldt-{w20}"),
    ("GitLab feed token", ("glft-",), r"glft-[\w-]{20,}", "glft-{w20}"),
    ("GitLab incoming mail token", ("glimt-",), r"glimt-[\w-]{25,}", "glimt-{w25}"),
    ("GitLab agent token", ("glagent-",), r"glagent-[\w-]{50,}", "glagent-{w50}"),
    ("GitLab OAuth secret", ("gloas-",), r"gloas-[\w-]{64,}", "gloas-{w64}"),
    ("GitLab CI job token", ("glcbt-",), r"glcbt-[A-Za-z0-9]{1,5}_[\w-]{20,}", "glcbt-{a2}_{w20}"),
    ("GitLab feature flag token", ("glffct-",), r"glffct-[\w-]{20,}", "glffct-{w20}"),
    ("GitLab SCIM token", ("glsoat-",), r"glsoat-[\w-]{20,}", "glsoat-{w20}"),
    (
        "GitLab session cookie",
        ("gitlab_session=",),
        r"(?<=_gitlab_session=)[0-9a-z]{32}",
        "_gitlab_session=«{l32}»",
    ),
    ("Atlassian API token", ("atatt3",), r"\bATATT3[\w=-]{150,}", "ATATT3{w186}"),
    ("Buildkite", ("bkua_",), r"bkua_[a-f0-9]{40}", "bkua_{h40}"),
    ("CircleCI", ("ccipat_",), r"CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}", "CCIPAT_{a22}_{h40}"),
    (
        "Sourcegraph",
        ("sgp_",),
        r"sgp_(?:(?:[a-fA-F0-9]{16}|local)_)?[a-fA-F0-9]{40}",
        "sgp_{h16}_{h40}",
    ),
    ("Linear", ("lin_api_",), r"lin_api_[A-Za-z0-9]{40}", "lin_api_{a40}"),
    ("Linear OAuth token", ("lin_oauth_",), r"lin_oauth_[a-f0-9]{64}", "lin_oauth_{h64}"),
    ("Notion", ("ntn_",), r"ntn_[A-Za-z0-9]{40,}", "ntn_{d11}{a35}"),
    ("Notion legacy", ("secret_",), r"secret_[A-Za-z0-9]{43}\b", "secret_{a43}"),
    ("Figma", ("figd_",), r"figd_[\w-]{40,}", "figd_{w40}"),
    (
        "HubSpot private app",
        ("pat-",),
        rf"pat-(?:na|eu|ap)\d-{_UUID}",
        f"pat-na1-{_UUID_SHAPE}",
    ),
    (
        "Harness",
        ("pat.", "sat."),
        r"(?:pat|sat)\.[\w-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}",
        "pat.{w22}.{a24}.{a20}",
    ),
    ("Postman", ("pmak-",), r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", "PMAK-{h24}-{h34}"),
    ("Prefect", ("pnu_",), r"pnu_[A-Za-z0-9]{36}", "pnu_{a36}"),
    ("ReadMe", ("rdme_",), r"rdme_[a-z0-9]{70}", "rdme_{l70}"),
    ("Frame.io", ("fio-",), r"fio-u-[\w=-]{64}", "fio-u-{w64}"),
    ("Dynatrace", ("dt0c01.",), r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}", "dt0c01.{a24}.{a64}"),
    ("New Relic user key", ("nrak-",), r"NRAK-[A-Z0-9]{27}", "NRAK-{u27}"),
    ("New Relic insert key", ("nrii-",), r"NRII-[\w-]{32}", "NRII-{w32}"),
    ("New Relic browser key", ("nrjs-",), r"NRJS-[a-f0-9]{19}", "NRJS-{h19}"),
    ("Defined Networking", ("dnkey-",), r"dnkey-[\w=-]{26}-[\w=-]{52}", "dnkey-{w26}-{w52}"),
    ("Typeform", ("tfp_",), r"tfp_[\w.=-]{59}", "tfp_{w59}"),
    ("SettleMint", ("sm_",), r"sm_(?:aat|pat|sat)_[A-Za-z0-9]{16}", "sm_pat_{a16}"),
    (
        "Authress",
        ("sc_", "ext_", "scauth_", "authress_"),
        r"(?:sc|ext|scauth|authress)_[a-z0-9]{5,30}\.[a-z0-9]{4,6}\.acc[_-][a-z0-9-]{10,32}"
        r"\.[\w+/=-]{30,120}",
        "sc_{l12}.{l5}.acc_{l20}.{l40}",
    ),
    ("Intra42", ("s-",), r"s-s4t2(?:ud|af)-[a-f0-9]{64}", "s-s4t2ud-{h64}"),
    (
        "1Password service account",
        ("ops_",),
        r"ops_eyJ[A-Za-z0-9+/]{100,}={0,3}",
        "ops_eyJ{a250}",
    ),
    ("Contentful", ("cfpat-",), r"CFPAT-[\w-]{43}", "CFPAT-{w43}"),
    ("Adobe client secret", ("p8e-",), r"p8e-[A-Za-z0-9]{32}", "p8e-{a32}"),
    ("PostHog", ("phx_",), r"phx_[A-Za-z0-9]{43}", "phx_{a43}"),
    ("Resend", ("re_",), r"re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}", "re_{a8}_{a24}"),
    (
        "LaunchDarkly",
        ("api-", "sdk-", "mob-"),
        rf"(?:api|sdk|mob)-{_UUID}\b",
        f"sdk-{_UUID_SHAPE}",
    ),
    (
        "JSON Web Token",
        ("eyj",),
        r"\beyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]+",
        "eyJ{a20}.eyJ{a40}.{a43}",
    ),
    # Package registries
    ("npm", ("npm_",), r"npm_[A-Za-z0-9]{30,}", "npm_{a36}"),
    ("PyPI", ("*pypi-",), r"pypi-AgE[\w-]{50,}", "pypi-AgEIcHlwaS5vcmc{w70}"),
    ("RubyGems", ("rubygems_",), r"rubygems_[a-f0-9]{48}", "rubygems_{h48}"),
    ("Clojars", ("clojars_",), r"CLOJARS_[A-Za-z0-9]{60}", "CLOJARS_{a60}"),
    ("Docker Hub", ("*dckr_",), r"dckr_(?:pat|oat)_[\w-]{20,}", "dckr_pat_{w27}"),
    # Chat, mail and messaging
    ("Slack configuration token", ("*xox",), r"xoxe[.-][\w.-]{10,}", "xoxe.xoxp-1-{u163}"),
    ("Slack bot token", ("*xox",), r"xoxb-[A-Za-z0-9-]{10,}", "xoxb-{d12}-{d13}-{a24}"),
    ("Slack user token", ("*xox",), r"xoxp-[A-Za-z0-9-]{10,}", "xoxp-{d12}-{d12}-{d12}-{h32}"),
    (
        "Slack legacy token",
        ("*xox",),
        r"xox[aosr]-[A-Za-z0-9-]{10,}",
        "xoxs-{d10}-{d12}-{h64}",
    ),
    ("Slack app token", ("xapp-",), r"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+", "xapp-1-{u11}-{d13}-{h64}"),
    (
        "Slack webhook",
        ("hooks.",),
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[\w/+-]+",
        "https://hooks.slack.com/services/T{u8}/B{u8}/{a24}",
    ),
    (
        "Discord webhook",
        ("discord.", "discordapp."),
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[\w-]+",
        "https://discord.com/api/webhooks/{d18}/{w68}",
    ),
    (
        "Discord bot token",
        ("discord_", "discord-", "bot.", "bot_"),
        r"[MNO][\w-]{23,25}\.[\w-]{6}\.[\w-]{27,38}\b",
        "python bot.py «MT{a24}.{a6}.{a38}»",
    ),
    (
        "Telegram bot token",
        ("telegram.",),
        r"/bot(?P<secret>\d{5,16}:[\w-]{30,})",
        "curl https://api.telegram.org/bot«{d10}:AA{w33}»/getMe",
    ),
    ("SendGrid", ("sg.",), r"SG\.[\w-]{16,32}\.[\w-]{16,64}", "SG.{w22}.{w43}"),
    (
        "Brevo",
        ("xkeysib-", "xsmtpsib-"),
        r"x(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}",
        "xkeysib-{h64}-{a16}",
    ),
    ("Mailgun", ("key-",), r"key-[a-f0-9]{32}\b", "key-{h32}"),
    ("Mailgun public key", ("pubkey-",), r"pubkey-[a-f0-9]{32}\b", "pubkey-{h32}"),
    (
        "Mailchimp",
        ("mailchimp.", "mailchimp_"),
        r"[a-f0-9]{32}-us\d{1,2}\b",
        "echo «{h32}-us21» > ~/.mailchimp.key",
    ),
    (
        "Twilio",
        ("twilio",),
        r"(?:AC|SK)[0-9a-fA-F]{32}(?::[A-Za-z0-9]{32})?\b",
        "curl https://api.twilio.com/2010-04-01/Accounts.json -u «SK{h32}:{a32}»",
    ),
    # Payments and commerce
    (
        "Stripe",
        ("sk_", "rk_"),
        r"[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,}",
        "sk_live_{a24}",
    ),
    ("Stripe webhook secret", ("*whsec_",), r"whsec_[A-Za-z0-9]{16,}", "whsec_{a32}"),
    (
        "Square",
        ("sq0atp-", "sq0csp-"),
        r"(?:sq0atp-|sq0csp-)[\w-]{22,60}",
        "sq0atp-{w22}",
    ),
    (
        "PayPal Braintree",
        ("access_token$",),
        r"access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}",
        "access_token$production${l16}${h32}",
    ),
    (
        "Flutterwave",
        ("flwseck_", "flwseck-"),
        r"FLWSECK(?:_TEST)?-[a-h0-9]{12,32}(?:-X)?",
        "FLWSECK_TEST-{h32}-X",
    ),
    ("Duffel", ("duffel_",), r"duffel_(?:test|live)_[\w=-]{43}", "duffel_live_{w43}"),
    ("Shippo", ("shippo_",), r"shippo_(?:live|test)_[a-fA-F0-9]{40}", "shippo_live_{h40}"),
    (
        "Plaid",
        ("access-",),
        rf"access-(?:sandbox|development|production)-{_UUID}",
        f"access-production-{_UUID_SHAPE}",
    ),
    ("GoCardless", ("live_",), r"live_[\w=-]{40}(?![\w=-])", "live_{w40}"),
    ("Lob", ("live_",), r"live_(?:pub_)?[a-f0-9]{31,35}\b", "live_{h35}"),
    ("Shopify access token", ("shpat_",), r"shpat_[a-fA-F0-9]{32}", "shpat_{h32}"),
    ("Shopify custom app", ("shpca_",), r"shpca_[a-fA-F0-9]{32}", "shpca_{h32}"),
    ("Shopify private app", ("shppa_",), r"shppa_[a-fA-F0-9]{32}", "shppa_{h32}"),
    ("Shopify shared secret", ("shpss_",), r"shpss_[a-fA-F0-9]{32}", "shpss_{h32}"),
    # Social and media
    ("Mapbox secret token", ("sk.",), r"sk\.eyJ[\w-]{50,}\.[\w-]{20,}", "sk.eyJ1{a60}.{w22}"),
    ("Dropbox short-lived token", ("sl.",), r"sl\.[\w=-]{130,}", "sl.{w135}"),
    ("Yandex access token", ("t1.",), r"t1\.[\w-]+=*\.[\w-]{86}=*", "t1.{w40}.{w86}"),
    (
        "Sidekiq",
        ("contribsys.", "contribsys_"),
        r"(?i:bundle_(?:enterprise|gems)__contribsys__com)[ \t]*[=:][ \t]*['\"]?"
        r"(?P<secret>[a-f0-9]{8}:[a-f0-9]{8})",
        "BUNDLE_GEMS__CONTRIBSYS__COM=«{h8}:{h8}» bundle install",
    ),
    # Passwords written to the files and scripts of clients
    (
        ".netrc",
        ("machine",),
        r"(?:\bmachine[ \t\n]+\S+|\bdefault\b)(?:[ \t\n]+(?:login|account|port)[ \t\n]+\S+){0,8}+"
        r"[ \t\n]+password[ \t\n]+['\"]?(?P<secret>[^\s'\"\\]+)",
        "printf 'machine api.acme.test login ci password «{a16}»\\n' >> ~/.netrc",
    ),
    (
        ".pgpass",
        ("pgpass",),
        r"(?<![^\s'\"])[\w.*-]+:(?:\d+|\*):[\w.*-]+:[\w.*-]+:(?P<secret>[^\s'\":]+)",
        "echo 'db.acme.test:5432:shop:app:«{a16}»' >> ~/.pgpass",
    ),
    (
        "expect script",
        ('send "', "send -- "),  # not "expect": hosts name a field noOutputExpected
        rf"expect[ \t]+(?:-\w+[ \t]+)*+(?:{_PROMPT}|(?>\S*?(?:assw|phrase))\S*+)"
        r"[\s{;]*send[ \t]+(?:--[ \t]+)?\"(?P<secret>[^\"\n]*?)(?:\\r|\\n)?\"",
        'expect -c \'spawn ssh deploy@web1; expect "*assword:"; send "«{a14}»\\r"; interact\'',
    ),
    # Kubernetes image pull secrets: base64 of a registry's auth, under a key starting with a dot.
    (
        "Docker config in a Kubernetes secret",
        ("dockerconfigjson", "dockercfg"),
        r"\.docker(?:configjson|cfg)[\"']?[ \t]*:[ \t]*[\"']?(?P<secret>[A-Za-z0-9+/]{16,}={0,2})",
        "  .dockerconfigjson: «eyJhdXRocyI6{b80}»",
    ),
    (
        "PuTTY private key",
        ("private-lines",),
        r"Private-Lines:[ \t]*\d{1,4}\r?\n"
        r"(?P<secret>[A-Za-z0-9+/=]{1,200}(?:\r?\n[A-Za-z0-9+/=]{1,200}(?=\r?\n|\Z)){0,400})",
        "Comment: deploy@ci\nPrivate-Lines: 2\n«{b64}\n{b40}==»\nPrivate-MAC: {h64}",
    ),
    # More prefixed formats: found as a piece of the text, they cost nothing until it holds one
    ("OpenAI service account", ("sk-",), r"sk-svcacct-[\w-]{40,}", "sk-svcacct-{w74}"),
    ("OpenAI admin key", ("sk-",), r"sk-admin-[\w-]{40,}", "sk-admin-{w74}"),
    ("Anthropic admin key", ("sk-",), r"sk-ant-admin\d\d-[\w-]{20,}", "sk-ant-admin01-{w93}"),
    ("Langfuse", ("sk-",), r"sk-lf-[a-f0-9-]{36}", f"sk-lf-{_UUID_SHAPE}"),
    ("Stripe restricted key", ("rk_",), r"rk_(?:live|test|prod)_[A-Za-z0-9]{10,}", "rk_live_{a24}"),
    ("Cartesia", ("sk_",), r"sk_car_[A-Za-z0-9]{20,}", "sk_car_{a24}"),
    ("Tavily", ("tvly-",), r"tvly-(?:dev-)?[A-Za-z0-9]{32}", "tvly-dev-{a32}"),
    ("Firecrawl", ("fc-",), r"fc-[a-f0-9]{32}\b", "fc-{h32}"),
    ("E2B", ("e2b_",), r"e2b_[a-f0-9]{40}", "e2b_{h40}"),
    ("Browserbase", ("bb_",), r"bb_live_[\w-]{27,}", "bb_live_{w27}"),
    ("Deno Deploy", ("ddp_",), r"ddp_[A-Za-z0-9]{36}", "ddp_{a36}"),
    ("dbt Cloud", ("dbtc_",), r"dbtc_[\w-]{40,}", "dbtc_{w48}"),
    ("SonarQube", ("squ_", "sqp_", "sqa_"), r"sq[upa]_[a-f0-9]{40}", "squ_{h40}"),
    ("Dependency-Track", ("odt_",), r"odt_[A-Za-z0-9]{32,}", "odt_{a32}"),
    ("Axiom", ("xaat-", "xapt-"), rf"xa[ap]t-{_UUID}", f"xaat-{_UUID_SHAPE}"),
    ("MailerSend", ("mlsn.",), r"mlsn\.[a-f0-9]{64}", "mlsn.{h64}"),
    ("Paddle", ("pdl_",), r"pdl_(?:live|sdbx)_apikey_[\w-]{20,}", "pdl_live_apikey_{w40}"),
    ("Razorpay", ("rzp_",), r"rzp_(?:live|test)_[A-Za-z0-9]{14}", "rzp_live_{a14}"),
    ("Stytch", ("secret-",), r"secret-(?:live|test)-[\w=-]{36}", "secret-live-{w36}"),
    ("Statsig", ("secret-",), r"secret-[A-Za-z0-9]{43}\b", "secret-{a43}"),
    ("Onfido", ("api_",), r"api_(?:live|sandbox)(?:_[a-z]{2})?\.[\w-]{43}", "api_live.{w43}"),
    ("Mollie", ("live_",), r"live_[A-Za-z0-9]{30}\b", "live_{a30}"),
    ("Anyscale", ("esecret_",), r"esecret_[A-Za-z0-9]{26,}", "esecret_{a26}"),
    (
        "Infisical",
        ("st.",),
        r"st\.[a-f0-9-]{36}\.[a-f0-9]{32}\.[a-f0-9]{32}",
        f"st.{_UUID_SHAPE}.{{h32}}.{{h32}}",
    ),
    ("Doppler personal token", ("dp.",), r"dp\.pt\.[A-Za-z0-9]{40,}", "dp.pt.{a43}"),
    ("Doppler service account", ("dp.",), r"dp\.sa\.[A-Za-z0-9]{40,}", "dp.sa.{a43}"),
    ("Doppler CLI token", ("dp.",), r"dp\.ct\.[A-Za-z0-9]{40,}", "dp.ct.{a43}"),
    (
        "Slack workflow webhook",
        ("hooks.",),
        r"https://hooks\.slack\.com/(?:workflows|triggers)/[\w/+-]+",
        "https://hooks.slack.com/triggers/T{u8}/{d13}/{h32}",
    ),
)
