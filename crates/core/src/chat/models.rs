//! The catalogue of model names an agent may name. A name like `gpt-4o-mini-16k` carries its
//! context budget in the suffix; the upstream model is the name without it.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelFamily {
    /// Served by an OpenAI-compatible Chat Completions endpoint when one is configured.
    OpenAi,
    /// Served by Workers AI when the `AI` binding exists.
    WorkersAi,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelInfo {
    pub name: &'static str,
    /// The model name sent upstream.
    pub upstream: &'static str,
    /// Tokens of context (prompt plus answer) this name allows.
    pub context_tokens: u32,
    pub family: ModelFamily,
}

const fn openai(name: &'static str, upstream: &'static str, context_tokens: u32) -> ModelInfo {
    ModelInfo {
        name,
        upstream,
        context_tokens,
        family: ModelFamily::OpenAi,
    }
}

const fn workers_ai(name: &'static str, context_tokens: u32) -> ModelInfo {
    ModelInfo {
        name,
        upstream: name,
        context_tokens,
        family: ModelFamily::WorkersAi,
    }
}

#[rustfmt::skip]
pub const MODELS: &[ModelInfo] = &[
    openai("gpt-3.5-turbo",    "gpt-3.5-turbo", 16_384),
    openai("gpt-4o-mini-4k",   "gpt-4o-mini",    4_096),
    openai("gpt-4o-mini-16k",  "gpt-4o-mini",   16_384),
    openai("gpt-4o-mini",      "gpt-4o-mini",  128_000),
    openai("gpt-4o-16k",       "gpt-4o",        16_384),
    openai("gpt-4o",           "gpt-4o",       128_000),
    openai("gpt-4.1-mini-16k", "gpt-4.1-mini",  16_384),
    openai("gpt-4.1-mini",     "gpt-4.1-mini", 128_000),
    workers_ai("@cf/meta/llama-3.1-8b-instruct", 8_192),
    workers_ai("@cf/meta/llama-3.3-70b-instruct-fp8-fast", 24_000),
];

pub const DEFAULT_MODEL: &str = "gpt-4o-mini-16k";

pub fn find(name: &str) -> Option<&'static ModelInfo> {
    MODELS.iter().find(|m| m.name == name)
}

/// The model an agent uses when it names none; the test below keeps it in the catalogue.
pub fn default_model() -> &'static ModelInfo {
    find(DEFAULT_MODEL).unwrap_or(&MODELS[0])
}

pub fn names() -> Vec<&'static str> {
    MODELS.iter().map(|m| m.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffix_names_carry_their_budget() {
        for m in MODELS.iter().filter(|m| m.family == ModelFamily::OpenAi) {
            if let Some(k) = m
                .name
                .rsplit('-')
                .next()
                .and_then(|s| s.strip_suffix('k'))
                .and_then(|n| n.parse::<u32>().ok())
            {
                assert_eq!(m.context_tokens, k * 1024, "{}", m.name);
                assert_eq!(format!("{}-{}k", m.upstream, k), m.name);
            }
        }
        assert_eq!(
            find("gpt-4o-mini-16k").map(|m| m.upstream),
            Some("gpt-4o-mini")
        );
        assert!(find(DEFAULT_MODEL).is_some());
        assert_eq!(default_model().name, DEFAULT_MODEL);
        assert!(find("gpt-5-ultra").is_none());
    }

    #[test]
    fn names_are_unique() {
        let mut all = names();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), MODELS.len());
    }
}
