//! The `aqs` binary: parses the command line and composes the roles. Everything else lives in the
//! crates: `aqs-core` (shared types), `aqs-control-plane`, `aqs-data-plane`, `aqs-console`.

use aqs::serve;

/// mimalloc rather than glibc malloc: measured, glibc's malloc/free were ~18% of the data plane's
/// CPU under publish load, and it kept freed memory (RSS) after 10,000 long polls closed.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use anyhow::Context;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "aqs", version, about = "AQS, the managed message queue")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve HTTP: the data plane, control plane and console (or the roles given).
    #[command(after_help = aqs_core::settings::help())]
    Serve {
        /// Comma-separated roles to run: data, control, console. Overrides AQS_ROLES.
        #[arg(long)]
        roles: Option<String>,
    },
    /// Apply the PostgreSQL migrations and exit.
    Migrate,
    /// Operator tasks.
    Admin {
        #[command(subcommand)]
        command: AdminCommand,
    },
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Give an existing member the operator role.
    GrantOperator { email: String },
    /// Change the installation's billing mode on purpose: `stripe` (add-ons billed) or `off`
    /// (granted without charge). Processes whose settings differ then refuse to start.
    BillingMode {
        #[arg(value_parser = ["stripe", "off"])]
        mode: String,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let huge_pages = huge_pages_off_unless_asked();
    let cli = Cli::parse();
    let mut config = aqs_core::config::Config::load()?;
    serve::init_tracing(&config.log)?;
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    if let Err(err) = huge_pages {
        tracing::warn!("could not turn transparent huge pages off for this process: {err}");
    }
    match cli.command {
        Command::Serve { roles } => {
            if let Some(roles) = roles {
                config.roles = aqs_core::config::Roles::parse(&roles).context("invalid --roles")?;
            }
            config.validate()?;
            let listener = tokio::net::TcpListener::bind(config.http_addr)
                .await
                .map_err(|err| anyhow::anyhow!("cannot listen on AQS_HTTP_ADDR {}: {err}", config.http_addr))?;
            serve::run(config, listener, serve::shutdown_signal()).await
        }
        Command::Migrate => {
            let db = serve::connect_postgres(&config).await?;
            aqs_control_plane::migrate(&db).await?;
            tracing::info!("migrations applied");
            Ok(())
        }
        Command::Admin { command: AdminCommand::GrantOperator { email } } => {
            let db = serve::connect_postgres(&config).await?;
            aqs_control_plane::grant_operator(&db, &email).await?;
            println!("{email} is now an operator");
            Ok(())
        }
        Command::Admin { command: AdminCommand::BillingMode { mode } } => {
            use aqs_control_plane::billing::mode::{self, BillingMode};
            let db = serve::connect_postgres(&config).await?;
            let wanted = BillingMode::parse(&mode).expect("clap allows only stripe and off");
            match mode::set(&db, wanted).await? {
                Some(before) if before == wanted => println!("the billing mode already was {mode}"),
                Some(before) => println!("billing mode changed from {} to {mode}", before.as_str()),
                None => println!("billing mode recorded: {mode}"),
            }
            Ok(())
        }
    }
}

/// Turns transparent huge pages off for this process, as Redis does for itself, unless
/// `MIMALLOC_ALLOW_THP` says otherwise (the allocator reads it at start: `1` keeps them, `0` turns
/// them off itself). mimalloc asks for huge pages on its arenas, so where the kernel grants them
/// (`madvise`, Debian's default) a sparsely used arena costs 2 MiB pages: 10,000 idle long polls
/// held 253–256 MiB with them and 172–183 MiB without, at the same throughput
/// (docs/production.md, "Memory").
fn huge_pages_off_unless_asked() -> nix::Result<()> {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
        return Ok(());
    }
    nix::sys::prctl::set_thp_disable(true)
}
