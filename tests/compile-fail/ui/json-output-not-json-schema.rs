use pi_tool::{tool, Json};

#[derive(serde::Serialize)]
struct Report {
    total: u32,
}

/// Count the tickets.
#[tool]
async fn count() -> Json<Report> {
    Json(Report { total: 1 })
}

/// Count the tickets, or fail.
#[tool]
async fn try_count() -> Result<Json<Report>, std::io::Error> {
    Ok(Json(Report { total: 1 }))
}

fn main() {}
