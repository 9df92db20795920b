//! The tools a request offers the model (OpenAI's `tools`, `tool_choice` and
//! `parallel_tool_calls`).

use serde_json::Value;

/// One function the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: Option<String>,
    /// A JSON Schema of the arguments object (`{"type": "object"}` when none was given).
    pub parameters: Value,
}

/// Whether and which tool the model must call (OpenAI's `tool_choice`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolChoice {
    /// Prose or calls, as the model likes.
    #[default]
    Auto,
    /// Prose only.
    None,
    /// At least one call.
    Required,
    /// A call of this function.
    Named(String),
}

/// The tools of one request.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSet {
    pub tools: Vec<Tool>,
    pub choice: ToolChoice,
    /// More than one call in an answer (OpenAI's `parallel_tool_calls`, default true).
    pub parallel: bool,
}

impl ToolSet {
    /// The tools in the shape chat templates and OpenAI's API take:
    /// `[{"type": "function", "function": {"name", "description", "parameters"}}]`.
    pub fn as_openai(&self) -> Vec<Value> {
        self.tools.iter().map(Tool::as_openai).collect()
    }
}

impl Tool {
    pub fn as_openai(&self) -> Value {
        let mut function = serde_json::Map::new();
        function.insert("name".into(), Value::from(self.name.as_str()));
        if let Some(d) = &self.description {
            function.insert("description".into(), Value::from(d.as_str()));
        }
        function.insert("parameters".into(), self.parameters.clone());
        serde_json::json!({ "type": "function", "function": function })
    }
}
