//! One `tools/call`: sent, then whichever comes first of the answer, the time limit, the
//! user's cancel, or word that the answer was too large to read. The limit and the cancel
//! send `notifications/cancelled` for the request. Every way it can go wrong ends in a
//! `ToolResult` with `is_error` and one sentence; none panics or hangs.

use super::connect::one_line;
use super::content::to_tool_result;
use super::shared::Shared;
use super::types::ToolResult;
use super::watch::Oversized;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, JsonObject, RequestId, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, oneshot};

pub async fn run(
    shared: Arc<Shared>,
    index: usize,
    tool: String,
    arguments: JsonObject,
    cancel: oneshot::Receiver<()>,
) -> ToolResult {
    let started = Instant::now();
    let fail = |text: String| ToolResult::failure(text, started.elapsed());
    let session = match shared.session(index) {
        Ok(s) => s,
        Err(why) => return fail(why),
    };
    let server = shared.slots()[index].status.name.clone();
    let params = CallToolRequestParams::new(tool.clone()).with_arguments(arguments);
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = match session
        .peer
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
    {
        Ok(h) => h,
        Err(e) => return fail(died(&shared, index, &server, &e).await),
    };
    let id = handle.id.clone();
    let peer = session.peer.clone();
    let cancelled = |reason: &'static str| {
        let peer = peer.clone();
        let id = id.clone();
        async move {
            let note = CancelledNotificationParam::new(Some(id), Some(reason.to_string()));
            // A server already gone cannot be told; the call ends all the same.
            let _ = peer.notify_cancelled(note).await;
        }
    };
    tokio::select! {
        answer = handle.await_response() => match answer {
            Ok(result) => match call_result(result) {
                Some(r) => to_tool_result(&r, shared.max_chars, started.elapsed()),
                None => fail(format!("`{server}` answered tools/call with something that is not a tool result")),
            },
            Err(ServiceError::McpError(e)) => fail(format!(
                "`{server}` refused the call of `{tool}`: {}",
                one_line(&e.message)
            )),
            Err(e) => fail(died(&shared, index, &server, &e).await),
        },
        _ = tokio::time::sleep(session.timeout) => {
            cancelled("the time limit passed").await;
            fail(format!(
                "`{tool}` on `{server}` took longer than {} s and was cancelled",
                session.timeout.as_secs()
            ))
        }
        _ = cancel => {
            cancelled("cancelled by the user").await;
            fail(format!("the call of `{tool}` was cancelled"))
        }
        _ = too_large(session.oversized, &id) => fail(format!(
            "`{server}` answered `{tool}` with more than {} MiB, which taper does not read",
            super::watch::MAX_MESSAGE_BYTES >> 20
        )),
    }
}

/// The tool result in `result`; a result without content may arrive as another kind.
fn call_result(result: ServerResult) -> Option<CallToolResult> {
    match result {
        ServerResult::CallToolResult(r) => Some(r),
        other => serde_json::to_value(other)
            .ok()
            .and_then(|v| serde_json::from_value(v).ok()),
    }
}

/// The sentence for a call whose session ended: the server's own failure when it is known.
async fn died(shared: &Shared, index: usize, server: &str, error: &ServiceError) -> String {
    match error {
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
            match shared.failure_of(index, Duration::from_secs(2)).await {
                Some(why) => format!("the call ended because {why}"),
                None => format!("`{server}` closed the connection during the call"),
            }
        }
        other => format!(
            "the call to `{server}` failed: {}",
            one_line(&other.to_string())
        ),
    }
}

/// Resolves when the watcher reports an oversized message for request `id` (or for an id it
/// could not read); never without a watcher.
async fn too_large(receiver: Option<broadcast::Receiver<Oversized>>, id: &RequestId) {
    let Some(mut receiver) = receiver else {
        return std::future::pending().await;
    };
    let id = id.to_string();
    loop {
        match receiver.recv().await {
            Ok(Some(of)) if of != id => continue,
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => return,
            Err(broadcast::error::RecvError::Closed) => return std::future::pending().await,
        }
    }
}
