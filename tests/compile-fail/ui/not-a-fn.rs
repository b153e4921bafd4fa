use pi_tool::tool;

/// Not a function.
#[tool]
struct Weather;

fn main() {}
