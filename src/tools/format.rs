//! Which tool-call syntax a model speaks, read from its chat template: each family's template
//! writes its own markers when it renders the assistant's earlier calls.

/// A family's way of writing tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolFormat {
    /// Hermes 2/3, Qwen 2.5/3: `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`.
    Hermes,
    /// Llama 3.1–3.3: a bare `{"name": …, "parameters": {…}}` (or after `<|python_tag|>`).
    Llama3,
    /// Phi-4-mini: `<|tool_call|>[{"name": …, "arguments": {…}}]<|/tool_call|>`.
    Phi4Mini,
    /// Gemma 4: `<|tool_call>call:NAME{key:<|"|>text<|"|>,…}<tool_call|>`.
    Gemma4,
    /// FunctionGemma: `<start_function_call>call:NAME{…}<end_function_call>`.
    FunctionGemma,
    /// Mistral: `[TOOL_CALLS][{"name": …, "arguments": {…}}]` (or `[TOOL_CALLS]NAME[ARGS]{…}`).
    Mistral,
    /// SmolLM3: `<tool_call>{"name": …, "arguments": {…}}</tool_call>` after its xml tool list.
    SmolLm3,
    /// Templates that know no tools: taper describes them in the system message and the
    /// answer is one JSON object, `{"tool_calls": [{"name", "arguments"}]}` or
    /// `{"response": "…"}`.
    Generic,
}

impl ToolFormat {
    /// The syntax a chat template teaches, from the markers it writes around earlier calls;
    /// [`ToolFormat::Generic`] when it writes none of them (or knows no tools at all).
    pub fn of_template(source: &str) -> Self {
        let has = |marker: &str| source.contains(marker);
        if has("<|tool_call>") {
            ToolFormat::Gemma4
        } else if has("<start_function_call>") {
            ToolFormat::FunctionGemma
        } else if has("<|tool_call|>") {
            ToolFormat::Phi4Mini
        } else if has("[TOOL_CALLS]") {
            ToolFormat::Mistral
        } else if has("<tool_call>") && has("xml_tools") {
            ToolFormat::SmolLm3
        } else if has("<tool_call>") {
            ToolFormat::Hermes
        } else if has("<|python_tag|>") || (has("<|start_header_id|>") && has("ipython")) {
            ToolFormat::Llama3
        } else {
            ToolFormat::Generic
        }
    }

    /// The template renders `tools` itself; for [`ToolFormat::Generic`] taper describes them.
    pub fn template_knows_tools(self) -> bool {
        self != ToolFormat::Generic
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_apart_by_their_markers() {
        let cases = [
            (
                "{{ '<tool_call>\\n' }}{{ tool_call | tojson }}",
                ToolFormat::Hermes,
            ),
            (
                "{% if xml_tools %}<tool_call>{% endif %}",
                ToolFormat::SmolLm3,
            ),
            (
                "<|start_header_id|>ipython<|end_header_id|>",
                ToolFormat::Llama3,
            ),
            ("<|tool_call|>{{ x }}<|/tool_call|>", ToolFormat::Phi4Mini),
            (
                "<|tool_call>call:{{ name }}<tool_call|>",
                ToolFormat::Gemma4,
            ),
            ("<start_function_call>", ToolFormat::FunctionGemma),
            ("[TOOL_CALLS]{{ calls }}", ToolFormat::Mistral),
            ("<|im_start|>{{ m.role }}", ToolFormat::Generic),
        ];
        for (source, format) in cases {
            assert_eq!(ToolFormat::of_template(source), format, "{source}");
        }
    }
}
