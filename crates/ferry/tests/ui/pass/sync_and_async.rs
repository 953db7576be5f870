//! A sync and an async body: both stay callable as written and both get an invocation type.

use ferry::Function;

#[ferry::function]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[ferry::function]
async fn greet(name: String) -> String {
    format!("hello, {name}")
}

/// Unit return, sync and async.
#[ferry::function]
fn log_line(line: String) {
    let _ = line;
}

#[ferry::function]
async fn log_line_async(line: String) {
    let _ = line;
}

fn main() {
    assert_eq!(add(2, 3), 5);
    let _greeting = greet("ferry".to_owned());
    log_line("direct".to_owned());

    let _: Add = Add { a: 2, b: 3 };
    let _: Greet = Greet {
        name: "ferry".to_owned(),
    };
    let _: LogLine = LogLine {
        line: String::new(),
    };
    let _: LogLineAsync = LogLineAsync {
        line: String::new(),
    };

    assert!(!Add::DESCRIPTOR.is_async);
    assert!(Greet::DESCRIPTOR.is_async);
    assert_eq!(Add::DESCRIPTOR.output, "i64");
    assert_eq!(LogLine::DESCRIPTOR.output, "()");
    assert_eq!(LogLineAsync::DESCRIPTOR.output, "()");

    // The output types are what the bodies return.
    fn output_of<F: Function>(_: &F) -> std::marker::PhantomData<F::Output> {
        std::marker::PhantomData
    }
    let _: std::marker::PhantomData<i64> = output_of(&Add { a: 0, b: 0 });
    let _: std::marker::PhantomData<String> = output_of(&Greet {
        name: String::new(),
    });
    let _: std::marker::PhantomData<()> = output_of(&LogLine {
        line: String::new(),
    });
}
