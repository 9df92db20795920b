//! How many tokens to draft, adapted to how the answer goes: a run of kept drafts doubles
//! the next draft (a quote goes on), a miss shrinks it to what was kept plus one, and passes
//! that keep nothing send the drafter to rest for a while, longer each time, so an answer
//! that does not repeat its prompt pays for a few small verify passes at most.

/// The longest draft: a verify pass of nine rows still costs about one decode step on the
/// small models, and longer runs are rarely kept whole.
const LONGEST: usize = 8;
/// The first draft of an answer.
const FIRST: usize = 4;
/// Passes in a row that keep nothing before the drafter rests.
const MISSES_BEFORE_REST: usize = 2;
/// The first rest, in tokens; each rest in a row doubles it, up to 2^MAX_BACKOFF times.
const REST: usize = 8;
const MAX_BACKOFF: u32 = 4;

#[derive(Debug)]
pub struct Pace {
    /// Tokens to draft next time.
    next: usize,
    /// Passes in a row that kept nothing.
    misses: usize,
    /// Tokens left to decode without drafting.
    resting: usize,
    /// Rests in a row (no kept draft between them).
    backoff: u32,
}

impl Default for Pace {
    fn default() -> Self {
        Self {
            next: FIRST,
            misses: 0,
            resting: 0,
            backoff: 0,
        }
    }
}

impl Pace {
    /// Tokens to draft for this step (0 while resting); called once per decode step.
    pub fn want(&mut self) -> usize {
        if self.resting > 0 {
            self.resting -= 1;
            return 0;
        }
        self.next
    }

    /// A pass verified `drafted` tokens and kept `accepted`. True when it sent the drafter
    /// to rest.
    pub fn record(&mut self, drafted: usize, accepted: usize) -> bool {
        if drafted == 0 {
            return false;
        }
        if accepted == drafted {
            self.next = (self.next * 2).min(LONGEST);
        } else {
            self.next = (accepted + 1).min(LONGEST);
        }
        if accepted > 0 {
            self.misses = 0;
            self.backoff = 0;
            return false;
        }
        self.misses += 1;
        if self.misses < MISSES_BEFORE_REST {
            return false;
        }
        self.misses = 0;
        self.resting = REST << self.backoff;
        self.backoff = (self.backoff + 1).min(MAX_BACKOFF);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_drafts_grow_the_next_one_up_to_the_longest() {
        let mut pace = Pace::default();
        assert_eq!(pace.want(), FIRST);
        pace.record(FIRST, FIRST);
        assert_eq!(pace.want(), 8);
        pace.record(8, 8);
        assert_eq!(pace.want(), LONGEST);
    }

    #[test]
    fn a_miss_shrinks_the_draft_to_what_was_kept_plus_one() {
        let mut pace = Pace::default();
        pace.record(4, 2);
        assert_eq!(pace.want(), 3);
    }

    #[test]
    fn passes_that_keep_nothing_send_the_drafter_to_rest_longer_each_time() {
        let mut pace = Pace::default();
        assert!(!pace.record(4, 0));
        assert_eq!(pace.want(), 1);
        assert!(pace.record(1, 0));
        let rested = (0..100).take_while(|_| pace.want() == 0).count();
        assert_eq!(rested, REST);
        pace.record(1, 0);
        pace.record(1, 0);
        let rested = (0..100).take_while(|_| pace.want() == 0).count();
        assert_eq!(rested, 2 * REST);
        // A kept draft ends the back-off.
        pace.record(1, 1);
        pace.record(2, 0);
        pace.record(1, 0);
        let rested = (0..100).take_while(|_| pace.want() == 0).count();
        assert_eq!(rested, REST);
    }
}
