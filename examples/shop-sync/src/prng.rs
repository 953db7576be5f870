//! The seeded pseudo-random generator every random choice of the case study draws from:
//! xorshift128+, exactly as the thesis's mock servers define it, so a pair of seeds names one
//! workload on every machine and in every process.

/// The thesis's default first seed.
pub const DEFAULT_X_SEED: u64 = 3_199_077_918_806_463_242;
/// The thesis's default second seed.
pub const DEFAULT_Y_SEED: u64 = 11_403_738_689_752_549_865;

/// xorshift128+ (Vigna): `x = s0; y = s1; s0 = y; x ^= x << 23;
/// s1 = x ^ y ^ (x >> 17) ^ (y >> 26); return s1 + y` (wrapping).
///
/// Ranges are drawn with Lemire's multiply-and-reject, which is unbiased and uses only integer
/// arithmetic: the same seeds give the same values on every platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Xorshift128Plus {
    s0: u64,
    s1: u64,
}

impl Xorshift128Plus {
    /// A generator in the state `(x_seed, y_seed)`. The all-zero state would only ever yield
    /// zeros, so, as in the original, it becomes `(u64::MAX, 0)`.
    pub fn new(x_seed: u64, y_seed: u64) -> Self {
        let s0 = if x_seed == 0 && y_seed == 0 {
            u64::MAX
        } else {
            x_seed
        };
        Self { s0, s1: y_seed }
    }

    /// The generator with the thesis's default seeds.
    pub fn with_default_seeds() -> Self {
        Self::new(DEFAULT_X_SEED, DEFAULT_Y_SEED)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.s0;
        let y = self.s1;
        self.s0 = y;
        x ^= x << 23;
        self.s1 = x ^ y ^ (x >> 17) ^ (y >> 26);
        self.s1.wrapping_add(y)
    }

    /// Uniform in `0..n`.
    ///
    /// # Panics
    ///
    /// When `n` is 0: the range is empty.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "cannot draw from an empty range");
        // Values of the low half under this threshold would make some results more likely.
        let threshold = n.wrapping_neg() % n;
        loop {
            let product = u128::from(self.next_u64()) * u128::from(n);
            if product as u64 >= threshold {
                return (product >> 64) as u64;
            }
        }
    }

    /// Uniform in `low..=high`.
    ///
    /// # Panics
    ///
    /// When `low > high`, or the range spans all of `u64`.
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        assert!(low <= high, "empty range {low}..={high}");
        low + self.below(high - low + 1)
    }

    /// A fair coin.
    pub fn coin(&mut self) -> bool {
        self.next_u64() >> 63 == 1
    }

    /// True with probability `numerator / denominator`.
    pub fn chance(&mut self, numerator: u64, denominator: u64) -> bool {
        self.below(denominator) < numerator
    }

    /// One element of a non-empty slice.
    ///
    /// # Panics
    ///
    /// When `items` is empty.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// Shuffles in place (Fisher–Yates, from the back).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for last in (1..items.len()).rev() {
            let other = self.below(last as u64 + 1) as usize;
            items.swap(last, other);
        }
    }
}
