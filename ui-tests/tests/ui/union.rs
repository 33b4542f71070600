use a2a_error::A2aError;

#[derive(A2aError)]
pub union Bits {
    a: u32,
    b: f32,
}

fn main() {}
