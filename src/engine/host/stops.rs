//! Stop strings over streamed text: the answer ends before the first stop string, and text
//! that might be the start of one is held back until it is known not to be.

/// Matches stop strings across the pieces of an answer.
#[derive(Debug, Default)]
pub struct StopMatcher {
    stops: Vec<String>,
    held: String,
    hit: bool,
}

impl StopMatcher {
    pub fn new(stops: Vec<String>) -> Self {
        Self {
            stops,
            ..Self::default()
        }
    }

    /// A stop string was found: the answer is over.
    pub fn hit(&self) -> bool {
        self.hit
    }

    /// Takes a piece of text; returns what may be sent now.
    pub fn push(&mut self, piece: &str) -> String {
        if self.hit {
            return String::new();
        }
        if self.stops.is_empty() {
            return piece.to_string();
        }
        self.held.push_str(piece);
        let first = self
            .stops
            .iter()
            .filter_map(|s| self.held.find(s.as_str()))
            .min();
        if let Some(at) = first {
            self.hit = true;
            let out = self.held[..at].to_string();
            self.held.clear();
            return out;
        }
        let keep = self.partial_suffix();
        let out = self.held[..self.held.len() - keep].to_string();
        self.held.drain(..self.held.len() - keep);
        out
    }

    /// The held text once the answer ended without a stop string.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }

    /// Bytes at the end of the held text that begin some stop string (the longest such).
    fn partial_suffix(&self) -> usize {
        let held = &self.held;
        (1..=held.len())
            .rev()
            .filter(|&n| held.is_char_boundary(held.len() - n))
            .find(|&n| {
                let tail = &held[held.len() - n..];
                self.stops
                    .iter()
                    .any(|s| s.len() > n && s.starts_with(tail))
            })
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_before_a_stop_string_split_across_pieces_is_kept() {
        let mut m = StopMatcher::new(vec!["END".into()]);
        assert_eq!(m.push("hello E"), "hello ");
        assert_eq!(m.push("N"), "");
        assert_eq!(m.push("D and more"), "");
        assert!(m.hit());
        assert_eq!(m.push("later"), "");
    }

    #[test]
    fn a_false_start_is_released() {
        let mut m = StopMatcher::new(vec!["END".into()]);
        assert_eq!(m.push("an E"), "an ");
        assert_eq!(m.push("gg"), "Egg");
        assert_eq!(m.push("E"), "");
        assert_eq!(m.finish(), "E");
        assert!(!m.hit());
    }

    #[test]
    fn no_stop_strings_pass_everything() {
        let mut m = StopMatcher::new(Vec::new());
        assert_eq!(m.push("é"), "é");
    }
}
