//! A `pub` function's invocation type has the function's visibility, fields included.

mod math {
    #[ferry::function]
    pub fn scale(value: f64, factor: f64) -> f64 {
        value * factor
    }

    #[ferry::function]
    pub(crate) async fn negate(value: i32) -> i32 {
        -value
    }
}

mod client {
    use ferry::Function;

    use crate::math::{Negate, Scale};

    pub fn build() -> (Scale, Negate) {
        let scale = Scale {
            value: 2.0,
            factor: 3.0,
        };
        assert_eq!(scale.value * scale.factor, 6.0);
        assert!(Scale::DESCRIPTOR.id.ends_with("::math::scale"));
        (scale, Negate { value: 1 })
    }
}

fn main() {
    assert_eq!(math::scale(2.0, 3.0), 6.0);
    let (_scale, negate) = client::build();
    assert_eq!(negate.value, 1);
}
