//! A generated catalog of MCP-like tools for search tests and benches: `servers` servers of up
//! to 100 tools each (10 resources × 10 actions), with realistic names, descriptions and
//! parameter schemas. Deterministic: the same arguments give the same tools.

#![allow(dead_code, unreachable_pub)]

use serde_json::{Map, Value, json};

/// (server prefix, product name, [(resource, plural, what it is, [(field, field description)])]).
type Server = (
    &'static str,
    &'static str,
    &'static [(
        &'static str,
        &'static str,
        &'static str,
        &'static [(&'static str, &'static str)],
    )],
);

const SERVERS: &[Server] = &[
    (
        "github",
        "GitHub",
        &[
            (
                "issue",
                "issues",
                "a bug report or feature request in a repository",
                &[
                    ("title", "Issue title"),
                    ("body", "Markdown body"),
                    ("labels", "Label names"),
                ],
            ),
            (
                "pull_request",
                "pull requests",
                "a proposed change to merge from one branch into another",
                &[
                    ("head", "Branch with the changes"),
                    ("base", "Branch to merge into"),
                ],
            ),
            (
                "repository",
                "repositories",
                "a git repository with its settings",
                &[
                    ("owner", "User or organization"),
                    ("private", "Whether only members can see it"),
                ],
            ),
            (
                "branch",
                "branches",
                "a named line of commits",
                &[("from", "Commit or branch to start from")],
            ),
            (
                "commit",
                "commits",
                "a recorded snapshot of the code",
                &[("sha", "Commit hash")],
            ),
            (
                "release",
                "releases",
                "a tagged version with release notes and assets",
                &[("tag", "Git tag"), ("notes", "Release notes")],
            ),
            (
                "workflow_run",
                "workflow runs",
                "a CI run of a GitHub Actions workflow",
                &[("workflow", "Workflow file name")],
            ),
            (
                "gist",
                "gists",
                "a shared code snippet",
                &[("files", "File names and contents")],
            ),
            (
                "review_comment",
                "review comments",
                "a comment on a line of a pull request diff",
                &[("line", "Line number"), ("path", "File path")],
            ),
            (
                "webhook",
                "webhooks",
                "an HTTP callback for repository events",
                &[("url", "Payload URL"), ("events", "Event names")],
            ),
        ],
    ),
    (
        "slack",
        "Slack",
        &[
            (
                "message",
                "messages",
                "a chat message posted in a channel",
                &[("channel", "Channel id"), ("text", "Message text")],
            ),
            (
                "channel",
                "channels",
                "a conversation space for a team",
                &[("name", "Channel name"), ("topic", "Channel topic")],
            ),
            (
                "user",
                "users",
                "a member of the workspace",
                &[("email", "Email address")],
            ),
            (
                "reaction",
                "reactions",
                "an emoji reaction on a message",
                &[("emoji", "Emoji name")],
            ),
            (
                "reminder",
                "reminders",
                "a scheduled reminder for a user",
                &[("time", "When to remind")],
            ),
            (
                "file",
                "files",
                "a file uploaded to a conversation",
                &[("filename", "File name")],
            ),
            (
                "thread",
                "threads",
                "replies under a message",
                &[("ts", "Parent message timestamp")],
            ),
            (
                "user_group",
                "user groups",
                "a named group of users that can be mentioned",
                &[("handle", "Group handle")],
            ),
            (
                "bookmark",
                "bookmarks",
                "a link pinned to a channel header",
                &[("link", "Bookmarked URL")],
            ),
            (
                "status",
                "statuses",
                "a user's presence and status text",
                &[("status_text", "Status text"), ("emoji", "Status emoji")],
            ),
        ],
    ),
    (
        "jira",
        "Jira",
        &[
            (
                "ticket",
                "tickets",
                "a tracked work item in a project",
                &[
                    ("summary", "Ticket summary"),
                    ("priority", "Priority level"),
                ],
            ),
            (
                "sprint",
                "sprints",
                "a time-boxed iteration of a board",
                &[("goal", "Sprint goal")],
            ),
            (
                "board",
                "boards",
                "a kanban or scrum board",
                &[("board_type", "scrum or kanban")],
            ),
            (
                "epic",
                "epics",
                "a large body of work split into tickets",
                &[("epic_name", "Epic name")],
            ),
            (
                "worklog",
                "worklogs",
                "time spent on a ticket",
                &[("hours", "Hours spent")],
            ),
            (
                "component",
                "components",
                "a part of a project tickets belong to",
                &[("lead", "Component lead")],
            ),
            (
                "version",
                "versions",
                "a planned product version with its fix tickets",
                &[("release_date", "Planned release date")],
            ),
            (
                "filter",
                "filters",
                "a saved JQL query",
                &[("jql", "JQL query text")],
            ),
            (
                "attachment",
                "attachments",
                "a file attached to a ticket",
                &[("mime_type", "MIME type")],
            ),
            (
                "transition",
                "transitions",
                "a workflow status change of a ticket",
                &[("status", "Target status")],
            ),
        ],
    ),
    (
        "postgres",
        "PostgreSQL",
        &[
            (
                "table",
                "tables",
                "a relational table with columns",
                &[
                    ("schema_name", "Schema name"),
                    ("columns", "Column definitions"),
                ],
            ),
            (
                "row",
                "rows",
                "a record of a table",
                &[("where_clause", "SQL condition")],
            ),
            (
                "index",
                "indexes",
                "a B-tree or GIN index that speeds up queries",
                &[("columns", "Indexed columns")],
            ),
            (
                "query_plan",
                "query plans",
                "the EXPLAIN output of a SQL statement",
                &[("sql", "SQL statement")],
            ),
            (
                "role",
                "roles",
                "a database login or group with privileges",
                &[("privileges", "Granted privileges")],
            ),
            (
                "extension",
                "extensions",
                "an installed database extension such as pgvector",
                &[("extension_name", "Extension name")],
            ),
            (
                "backup",
                "backups",
                "a dump of the database for restore",
                &[("format", "Dump format")],
            ),
            (
                "connection",
                "connections",
                "an open client session to the server",
                &[("pid", "Backend process id")],
            ),
            (
                "view",
                "views",
                "a stored SELECT query",
                &[("definition", "SELECT statement")],
            ),
            (
                "migration",
                "migrations",
                "a versioned schema change script",
                &[("version", "Migration version")],
            ),
        ],
    ),
    (
        "fs",
        "the local file system",
        &[
            (
                "file",
                "files",
                "a regular file on disk",
                &[
                    ("path", "Absolute file path"),
                    ("encoding", "Text encoding"),
                ],
            ),
            (
                "directory",
                "directories",
                "a folder holding files",
                &[
                    ("path", "Directory path"),
                    ("recursive", "Include subfolders"),
                ],
            ),
            (
                "symlink",
                "symlinks",
                "a symbolic link to another path",
                &[("target", "Link target")],
            ),
            (
                "permission",
                "permissions",
                "the mode bits and owner of a path",
                &[("mode", "Octal mode")],
            ),
            (
                "archive",
                "archives",
                "a zip or tar archive",
                &[("archive_format", "zip or tar")],
            ),
            (
                "watcher",
                "watchers",
                "a subscription to file change events",
                &[("glob", "Glob pattern")],
            ),
            (
                "disk_usage",
                "disk usage reports",
                "how much space paths take",
                &[("depth", "Depth to report")],
            ),
            (
                "checksum",
                "checksums",
                "a SHA-256 digest of a file's bytes",
                &[("algorithm", "Hash algorithm")],
            ),
            (
                "temp_file",
                "temporary files",
                "a scratch file removed later",
                &[("suffix", "File name suffix")],
            ),
            (
                "mount",
                "mounts",
                "a mounted volume",
                &[("device", "Device path")],
            ),
        ],
    ),
    (
        "s3",
        "Amazon S3",
        &[
            (
                "bucket",
                "buckets",
                "a storage container for objects",
                &[("region", "AWS region")],
            ),
            (
                "object",
                "objects",
                "a stored blob under a key",
                &[("key", "Object key"), ("content_type", "MIME type")],
            ),
            (
                "presigned_url",
                "presigned URLs",
                "a temporary download or upload link",
                &[("expires_in", "Seconds until expiry")],
            ),
            (
                "lifecycle_rule",
                "lifecycle rules",
                "a rule that expires or moves objects to cheaper storage",
                &[("days", "Age in days")],
            ),
            (
                "bucket_policy",
                "bucket policies",
                "a JSON access policy of a bucket",
                &[("policy", "Policy document")],
            ),
            (
                "multipart_upload",
                "multipart uploads",
                "a large upload sent in parts",
                &[("part_size", "Part size in bytes")],
            ),
            (
                "object_version",
                "object versions",
                "an older version of an object",
                &[("version_id", "Version id")],
            ),
            (
                "object_tag",
                "object tags",
                "key-value metadata on an object",
                &[("tags", "Tag set")],
            ),
            (
                "replication_rule",
                "replication rules",
                "copying objects to a bucket in another region",
                &[("destination", "Destination bucket")],
            ),
            (
                "inventory_report",
                "inventory reports",
                "a scheduled listing of a bucket's objects",
                &[("schedule", "Daily or weekly")],
            ),
        ],
    ),
    (
        "calendar",
        "Google Calendar",
        &[
            (
                "event",
                "events",
                "a meeting or appointment with attendees",
                &[
                    ("start", "Start time"),
                    ("end", "End time"),
                    ("attendees", "Guest emails"),
                ],
            ),
            (
                "calendar",
                "calendars",
                "a named calendar of events",
                &[("time_zone", "IANA time zone")],
            ),
            (
                "availability",
                "availabilities",
                "free and busy time slots of people",
                &[("emails", "People to check")],
            ),
            (
                "room",
                "rooms",
                "a bookable meeting room",
                &[("capacity", "Seats")],
            ),
            (
                "recurrence",
                "recurrences",
                "the repeat rule of a recurring event",
                &[("rrule", "RFC 5545 rule")],
            ),
            (
                "invitation",
                "invitations",
                "an event invite sent to a guest",
                &[("response", "accepted or declined")],
            ),
            (
                "out_of_office",
                "out-of-office entries",
                "time a person is away on vacation",
                &[("until", "Last day away")],
            ),
            (
                "agenda",
                "agendas",
                "the day's list of upcoming events",
                &[("day", "Date")],
            ),
            (
                "event_reminder",
                "event reminders",
                "a notification before an event starts",
                &[("minutes_before", "Minutes before start")],
            ),
            (
                "working_hours",
                "working hours",
                "the hours a person can be booked",
                &[("weekdays", "Working days")],
            ),
        ],
    ),
    (
        "mail",
        "Gmail",
        &[
            (
                "email",
                "emails",
                "a mail message in the mailbox",
                &[
                    ("to", "Recipients"),
                    ("subject", "Subject line"),
                    ("body", "Message body"),
                ],
            ),
            (
                "draft",
                "drafts",
                "an unsent email being written",
                &[("to", "Recipients")],
            ),
            (
                "label",
                "labels",
                "a tag that organizes emails",
                &[("color", "Label color")],
            ),
            (
                "mail_filter",
                "mail filters",
                "a rule applied to incoming mail",
                &[("criteria", "Matching criteria")],
            ),
            (
                "contact",
                "contacts",
                "a person in the address book",
                &[("phone", "Phone number")],
            ),
            (
                "mail_attachment",
                "mail attachments",
                "a file attached to an email",
                &[("attachment_id", "Attachment id")],
            ),
            (
                "signature",
                "signatures",
                "the text appended to sent emails",
                &[("html", "Signature HTML")],
            ),
            (
                "vacation_responder",
                "vacation responders",
                "an automatic reply while away",
                &[("message", "Auto-reply text")],
            ),
            (
                "mail_thread",
                "mail threads",
                "a conversation of related emails",
                &[("thread_id", "Thread id")],
            ),
            (
                "spam_report",
                "spam reports",
                "a message reported as spam or phishing",
                &[("reason", "Why it is spam")],
            ),
        ],
    ),
    (
        "k8s",
        "Kubernetes",
        &[
            (
                "pod",
                "pods",
                "a group of running containers",
                &[("namespace", "Namespace"), ("container", "Container name")],
            ),
            (
                "deployment",
                "deployments",
                "a rollout of replicated pods",
                &[
                    ("replicas", "Desired replica count"),
                    ("image", "Container image"),
                ],
            ),
            (
                "service",
                "services",
                "a stable network endpoint for pods",
                &[("port", "Service port")],
            ),
            (
                "config_map",
                "config maps",
                "non-secret configuration data",
                &[("data", "Key-value data")],
            ),
            (
                "secret",
                "secrets",
                "sensitive values such as passwords and tokens",
                &[("secret_type", "Secret type")],
            ),
            (
                "node",
                "nodes",
                "a worker machine of the cluster",
                &[("labels", "Node labels")],
            ),
            (
                "ingress",
                "ingresses",
                "HTTP routing rules into the cluster",
                &[("host", "Host name")],
            ),
            (
                "cron_job",
                "cron jobs",
                "a job run on a schedule",
                &[("schedule", "Cron expression")],
            ),
            (
                "pod_log",
                "pod logs",
                "the log output of a container",
                &[("tail_lines", "Lines from the end")],
            ),
            (
                "helm_release",
                "Helm releases",
                "an installed Helm chart",
                &[("chart", "Chart name"), ("values", "Chart values")],
            ),
        ],
    ),
    (
        "stripe",
        "Stripe",
        &[
            (
                "customer",
                "customers",
                "a paying customer account",
                &[("email", "Billing email")],
            ),
            (
                "payment",
                "payments",
                "a card charge or payment intent",
                &[("amount", "Amount in cents"), ("currency", "Currency code")],
            ),
            (
                "refund",
                "refunds",
                "money returned to a customer for a charge",
                &[("charge", "Charge id")],
            ),
            (
                "subscription",
                "subscriptions",
                "a recurring plan billed every period",
                &[("price", "Price id")],
            ),
            (
                "invoice",
                "invoices",
                "a bill sent to a customer",
                &[("due_date", "Due date")],
            ),
            (
                "product",
                "products",
                "a good or service for sale",
                &[("product_name", "Product name")],
            ),
            (
                "coupon",
                "coupons",
                "a discount applied at checkout",
                &[("percent_off", "Discount percent")],
            ),
            (
                "payout",
                "payouts",
                "a transfer of the balance to a bank account",
                &[("bank_account", "Bank account id")],
            ),
            (
                "dispute",
                "disputes",
                "a chargeback contested by a card holder",
                &[("evidence", "Evidence text")],
            ),
            (
                "tax_rate",
                "tax rates",
                "a sales tax or VAT percentage",
                &[("jurisdiction", "Country or state")],
            ),
        ],
    ),
];

/// (verb in the name, sentence start, extra parameters).
const ACTIONS: &[(&str, &str)] = &[
    (
        "list",
        "List {plural} in {product}, newest first, one page at a time.",
    ),
    (
        "get",
        "Get one {resource} from {product} by its id, with all its fields.",
    ),
    ("create", "Create a new {resource} in {product}: {what}."),
    (
        "update",
        "Update the fields of an existing {resource} in {product}.",
    ),
    ("delete", "Delete a {resource} from {product} permanently."),
    (
        "search",
        "Search {plural} in {product} by free text and filters.",
    ),
    (
        "archive",
        "Archive a {resource} in {product} so it is hidden but kept.",
    ),
    ("export", "Export {plural} from {product} as CSV or JSON."),
    (
        "count",
        "Count the {plural} in {product} that match the filters.",
    ),
    (
        "watch",
        "Watch {plural} in {product} and report changes as they happen.",
    ),
];

/// One generated tool: (name, description, parameters schema).
pub struct CatalogTool {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// `servers` servers (the 10 products, then again with a numbered prefix), 100 tools each.
pub fn catalog(servers: usize) -> Vec<CatalogTool> {
    let mut out = Vec::with_capacity(servers * 100);
    for s in 0..servers {
        let (prefix, product, resources) = SERVERS[s % SERVERS.len()];
        let prefix = match s / SERVERS.len() {
            0 => prefix.to_owned(),
            n => format!("{prefix}{n}"),
        };
        for (resource, plural, what, fields) in resources {
            for (verb, template) in ACTIONS {
                let mut description = template
                    .replace("{plural}", plural)
                    .replace("{resource}", &resource.replace('_', " "))
                    .replace("{product}", product)
                    .replace("{what}", what);
                if *verb != "create" {
                    description.push_str(&format!(" A {} is {what}.", resource.replace('_', " ")));
                }
                out.push(CatalogTool {
                    name: format!("{prefix}_{verb}_{resource}"),
                    description,
                    parameters: parameters(verb, resource, fields),
                });
            }
        }
    }
    out
}

fn parameters(verb: &str, resource: &str, fields: &[(&str, &str)]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    let id = format!("{resource}_id");
    match verb {
        "list" | "export" | "count" | "watch" => {
            properties.insert(
                "limit".into(),
                json!({"type": "integer", "description": "Page size"}),
            );
            properties.insert(
                "cursor".into(),
                json!({"type": "string", "description": "Cursor from the previous page"}),
            );
        }
        "search" => {
            properties.insert(
                "query".into(),
                json!({"type": "string", "description": "Search text"}),
            );
            required.push("query".to_owned());
        }
        "create" => {}
        _ => {
            properties.insert(id.clone(), json!({"type": "string", "description": format!("Id of the {}", resource.replace('_', " "))}));
            required.push(id);
        }
    }
    if matches!(verb, "create" | "update" | "search") {
        for (field, doc) in fields {
            properties.insert(
                (*field).into(),
                json!({"type": "string", "description": doc}),
            );
        }
        if verb == "create" {
            required.extend(fields.iter().take(1).map(|(f, _)| (*f).to_owned()));
        }
    }
    json!({"type": "object", "properties": properties, "required": required})
}

/// Queries in the keyword style the `tool_search` description asks for (an action, a resource,
/// often a product), with the tool each should find. A query without an action word cannot
/// tell a resource's ten tools apart: "send an email" ties `mail_*_email` and loses on length.
pub const QUERIES: &[(&str, &str)] = &[
    ("open a new github issue for a bug", "github_create_issue"),
    (
        "merge request review comment on a diff line",
        "github_create_review_comment",
    ),
    ("list pull requests", "github_list_pull_request"),
    ("publish a release with notes", "github_create_release"),
    (
        "why did the CI workflow run fail",
        "github_get_workflow_run",
    ),
    ("post a message to a slack channel", "slack_create_message"),
    ("add an emoji reaction", "slack_create_reaction"),
    ("set my slack status", "slack_update_status"),
    ("remind me later in slack", "slack_create_reminder"),
    ("search slack messages", "slack_search_message"),
    ("create a jira ticket", "jira_create_ticket"),
    (
        "create a jira worklog of hours spent on a ticket",
        "jira_create_worklog",
    ),
    (
        "move ticket to done status transition",
        "jira_create_transition",
    ),
    ("start a new sprint", "jira_create_sprint"),
    ("get a saved JQL filter", "jira_get_filter"),
    (
        "explain query plan of a SQL statement",
        "postgres_get_query_plan",
    ),
    ("create a postgres table", "postgres_create_table"),
    ("delete rows matching a condition", "postgres_delete_row"),
    (
        "install the pgvector extension",
        "postgres_create_extension",
    ),
    ("dump the database to a backup", "postgres_create_backup"),
    ("get a text file from disk", "fs_get_file"),
    ("list files in a directory", "fs_list_directory"),
    ("compute the sha-256 checksum of a file", "fs_get_checksum"),
    ("change file permissions mode", "fs_update_permission"),
    ("make a zip archive", "fs_create_archive"),
    ("create an object in an s3 bucket", "s3_create_object"),
    ("presigned download link", "s3_create_presigned_url"),
    ("list s3 buckets", "s3_list_bucket"),
    (
        "expire old objects with a lifecycle rule",
        "s3_create_lifecycle_rule",
    ),
    ("delete an object version", "s3_delete_object_version"),
    ("schedule a meeting with attendees", "calendar_create_event"),
    (
        "get free busy availability of people",
        "calendar_get_availability",
    ),
    ("book a meeting room", "calendar_create_room"),
    ("what is on my agenda today", "calendar_get_agenda"),
    (
        "set out of office vacation",
        "calendar_create_out_of_office",
    ),
    ("create an email to recipients", "mail_create_email"),
    ("write a draft email", "mail_create_draft"),
    ("report phishing spam", "mail_create_spam_report"),
    ("add a contact to the address book", "mail_create_contact"),
    (
        "auto-reply vacation responder",
        "mail_create_vacation_responder",
    ),
    ("show pod logs", "k8s_get_pod_log"),
    ("scale a deployment replicas", "k8s_update_deployment"),
    ("list kubernetes pods", "k8s_list_pod"),
    ("install a helm chart", "k8s_create_helm_release"),
    ("create a cron job schedule", "k8s_create_cron_job"),
    ("refund a charge", "stripe_create_refund"),
    ("charge a card payment", "stripe_create_payment"),
    ("cancel a subscription", "stripe_delete_subscription"),
    ("send an invoice to a customer", "stripe_create_invoice"),
    ("contest a chargeback dispute", "stripe_update_dispute"),
];
