//! Custom hosts on the data plane: the in-process table of served hosts fed from the projection
//! ([`table`]), routing by `Host` on every listener ([`routing`]) and the certificate resolver of
//! the TLS listener ([`tls`]).

pub mod routing;
pub mod table;
pub mod tls;
