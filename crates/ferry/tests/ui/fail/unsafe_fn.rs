#[ferry::function]
unsafe fn read(addr: usize) -> u8 {
    unsafe { *(addr as *const u8) }
}

fn main() {}
