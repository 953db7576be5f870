//! Parameters and outputs that are the user's own serde types.

use std::collections::BTreeMap;

use ferry::Function;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Shape {
    Circle { center: Point, radius: f64 },
    Polygon(Vec<Point>),
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub count: usize,
    pub by_kind: BTreeMap<String, usize>,
}

#[ferry::function]
fn summarize(shapes: Vec<Shape>, origin: Option<Point>, tags: (String, u8)) -> Summary {
    let _ = (origin, tags);
    let mut by_kind = BTreeMap::new();
    for shape in &shapes {
        let kind = match shape {
            Shape::Circle { .. } => "circle",
            Shape::Polygon(_) => "polygon",
        };
        *by_kind.entry(kind.to_owned()).or_insert(0) += 1;
    }
    Summary {
        count: shapes.len(),
        by_kind,
    }
}

fn main() {
    let shapes = vec![
        Shape::Circle {
            center: Point { x: 0.0, y: 0.0 },
            radius: 1.0,
        },
        Shape::Polygon(vec![]),
    ];
    let summary = summarize(shapes.clone(), None, ("t".to_owned(), 1));
    assert_eq!(summary.count, 2);

    let invocation = Summarize {
        shapes,
        origin: Some(Point { x: 1.0, y: 2.0 }),
        tags: ("t".to_owned(), 1),
    };
    let params = Summarize::DESCRIPTOR.params;
    assert_eq!(params[0].ty, "Vec<Shape>");
    assert_eq!(params[1].ty, "Option<Point>");
    assert_eq!(params[2].ty, "(String, u8)");
    assert_eq!(Summarize::DESCRIPTOR.output, "Summary");
    let _ = invocation;
}
