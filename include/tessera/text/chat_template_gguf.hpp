// tessera::text: a model's chat template from its GGUF metadata, and what
// `--chat-template VALUE` means. Kept apart from chat_template.hpp so the template
// engine does not pull in the GGUF layer.
//
//   auto f = tessera::gguf::file::open("model.gguf");
//   const vocab v = vocab_from_gguf(f);                        // text/load.hpp
//   const chat_template t(resolve_chat_template(arg, f.meta()));  // arg "" = the file's
//   std::string prompt = t.apply(messages, chat_options_from_vocab(v));
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/gguf/metadata.hpp"
#include "tessera/text/chat_template.hpp"
#include "tessera/text/vocab.hpp"

TESSERA_BEGIN_NAMESPACE
namespace text {

// tokenizer.chat_template, or with a name tokenizer.chat_template.<name> (llama.cpp
// writes a model's extra named templates there, e.g. "tool_use"); nullopt when the
// key is absent. A key of another type than string throws errc::invalid_argument.
inline std::optional<std::string> chat_template_from_metadata(const gguf::metadata& m, std::string_view name = {}) {
    std::string key = "tokenizer.chat_template";
    if (!name.empty()) key += "." + std::string(name);
    return m.find<std::string>(key);
}

// The template variables a vocabulary supplies: bos_token and eos_token are the texts
// of its BOS and EOS tokens ("" when it has none).
inline chat_options chat_options_from_vocab(const vocab& v, bool add_generation_prompt = true) {
    chat_options o;
    if (v.bos != null_token) o.bos_token = v.text(v.bos);
    if (v.eos != null_token) o.eos_token = v.text(v.eos);
    o.add_generation_prompt = add_generation_prompt;
    return o;
}

// The template source `--chat-template VALUE` selects:
//   ""                       the file's tokenizer.chat_template (an error if it has none)
//   llama2|llama3|chatml|mistral  the built-in template of that name
//   text with "{{" or "{%"   the value itself, a Jinja template
// Anything else is an errc::invalid_argument naming the value and the known names.
inline std::string resolve_chat_template(std::string_view arg, const gguf::metadata& m) {
    if (arg.empty()) {
        if (std::optional<std::string> t = chat_template_from_metadata(m)) return *std::move(t);
        fail(errc::invalid_argument,
             "chat template: the model has no tokenizer.chat_template; pass --chat-template with one of llama2, "
             "llama3, chatml, mistral or a Jinja template");
    }
    for (const builtin_template& t : builtin_chat_templates)
        if (t.name == arg) return std::string(t.source);
    if (arg.find("{{") != std::string_view::npos || arg.find("{%") != std::string_view::npos) return std::string(arg);
    (void)builtin_chat_template(arg);  // throws, listing the known names
    return {};
}

}  // namespace text
TESSERA_END_NAMESPACE
