// Chat templates: the Jinja sources real models ship in tokenizer_config.json (and so
// in a GGUF's tokenizer.chat_template), rendered on llama.cpp's test conversation and
// compared byte for byte with the expected prompts of llama.cpp's
// tests/test-chat-template.cpp (its Jinja expectations) or with prompts worked out by
// hand from the template text; the Jinja semantics the subset implements, each against
// what Python's Jinja2 prints; errors for malformed, unsupported and hostile templates;
// and truncated / mutated templates that must fail only with tessera::error.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tessera/gguf/reader.hpp"
#include "tessera/gguf/writer.hpp"
#include "tessera/text/chat_template.hpp"
#include "tessera/text/chat_template_gguf.hpp"

using namespace tessera::text;
using tessera::errc;

namespace {

// llama.cpp's test conversation (system, user, assistant, user, assistant, user).
const std::vector<chat_message> conversation{
    {"system", "You are a helpful assistant"}, {"user", "Hello"},
    {"assistant", "Hi there"},                 {"user", "Who are you"},
    {"assistant", "   I am an assistant   "},  {"user", "Another question"},
};

chat_options opts(std::string bos, std::string eos, bool add_generation_prompt = true) {
    chat_options o;
    o.bos_token = std::move(bos);
    o.eos_token = std::move(eos);
    o.add_generation_prompt = add_generation_prompt;
    return o;
}

std::string render(std::string_view tmpl, const chat_options& o = {}, const std::vector<chat_message>& msgs = conversation) {
    return apply_chat_template(tmpl, msgs, o);
}

// f() must throw a tessera::error with `code` whose message contains every part.
template <class F>
void refused(F&& f, errc code, std::initializer_list<std::string_view> parts) {
    try {
        f();
        FAIL_CHECK("accepted; expected an error containing '" << *parts.begin() << "'");
    } catch (const tessera::error& e) {
        const std::string msg = e.what();
        CHECK_MESSAGE(e.code() == code, "'" << msg << "' has code " << tessera::errc_name(e.code()));
        for (auto p : parts) CHECK_MESSAGE(msg.find(p) != std::string::npos, "'" << msg << "' does not contain '" << p << "'");
    }
}

void template_refused(std::string_view tmpl, errc code, std::initializer_list<std::string_view> parts,
                      const chat_options& o = {}) {
    refused([&] { (void)render(tmpl, o); }, code, parts);
}

// ---- the templates as shipped (tokenizer_config.json "chat_template" values)

// meta-llama/Llama-2-7b-chat-hf
constexpr std::string_view llama2_chat =
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}"
    "{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
    "user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = "
    "'<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] "
    "%}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif "
    "message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";

// meta-llama/Meta-Llama-3-8B-Instruct (the JSON has real newlines inside the literals)
constexpr std::string_view llama3_instruct =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set "
    "content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

// teknium/OpenHermes-2.5-Mistral-7B (chatml)
constexpr std::string_view chatml_openhermes =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// Qwen/Qwen2-7B-Instruct (chatml with a default system message)
constexpr std::string_view chatml_qwen2 =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are a "
    "helpful assistant.<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// mistralai/Mistral-7B-Instruct-v0.1 / first v0.2 (user/assistant only)
constexpr std::string_view mistral_v01 =
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ "
    "raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if "
    "message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' "
    "%}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% "
    "endif %}{% endfor %}";

// mistralai/Mistral-7B-Instruct-v0.2 (the later revision with an optional system message)
constexpr std::string_view mistral_v02 =
    "{%- if messages[0]['role'] == 'system' %}\n    {%- set system_message = messages[0]['content'] %}\n    {%- set "
    "loop_messages = messages[1:] %}\n{%- else %}\n    {%- set loop_messages = messages %}\n{%- endif %}\n\n{{- bos_token "
    "}}\n{%- for message in loop_messages %}\n    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}\n        "
    "{{- raise_exception('After the optional system message, conversation roles must alternate "
    "user/assistant/user/assistant/...') }}\n    {%- endif %}\n    {%- if message['role'] == 'user' %}\n        {%- if "
    "loop.first and system_message is defined %}\n            {{- ' [INST] ' + system_message + '\\n\\n' + "
    "message['content'] + ' [/INST]' }}\n        {%- else %}\n            {{- ' [INST] ' + message['content'] + ' [/INST]' "
    "}}\n        {%- endif %}\n    {%- elif message['role'] == 'assistant' %}\n        {{- ' ' + message['content'] + "
    "eos_token}}\n    {%- else %}\n        {{- raise_exception('Only user and assistant roles are supported, with the "
    "exception of an initial optional system message!') }}\n    {%- endif %}\n{%- endfor %}\n";

// ---- expected prompts

const std::string llama2_expected =  // by hand: <<SYS>> block inside the first [INST], strip(), bos per user turn
    "<s>[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST] Hi there </s><s>[INST] Who are you [/INST] "
    "I am an assistant </s><s>[INST] Another question [/INST]";

const std::string llama3_expected =  // llama.cpp's "Llama-3" expectation, with bos_token "<|begin_of_text|>"
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful "
    "assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_"
    "id|>\n\nHi there<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWho are "
    "you<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nI am an "
    "assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nAnother "
    "question<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";

const std::string chatml_expected =  // llama.cpp's "teknium/OpenHermes-2.5-Mistral-7B"
    "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi "
    "there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n   I am an assistant   "
    "<|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n<|im_start|>assistant\n";

const std::string mistral_v02_expected =  // llama.cpp's Mistral-7B-Instruct-v0.2 'v1' Jinja expectation (bos "")
    " [INST] You are a helpful assistant\n\nHello [/INST] Hi there</s> [INST] Who are you [/INST]    I am an assistant   "
    "</s> [INST] Another question [/INST]";

}  // namespace

TEST_CASE("chat templates: llama-2-chat, llama-3-instruct, chatml, mistral-instruct as shipped") {
    CHECK(render(llama2_chat, opts("<s>", "</s>")) == llama2_expected);
    // add_generation_prompt does not appear in llama-2's template
    CHECK(render(llama2_chat, opts("<s>", "</s>", false)) == llama2_expected);
    // the worked example of transformers' chat-templating guide (system, user, assistant, user)
    const std::vector<chat_message> pirate{
        {"system", "You are a friendly chatbot who always responds in the style of a pirate"},
        {"user", "Hello, how are you?"},
        {"assistant", "I'm doing great. How can I help you today?"},
        {"user", "I'd like to show off how chat templating works!"},
    };
    CHECK(render(llama2_chat, opts("<s>", "</s>"), pirate) ==
          "<s>[INST] <<SYS>>\nYou are a friendly chatbot who always responds in the style of a pirate\n<</SYS>>\n\nHello, how "
          "are you? [/INST] I'm doing great. How can I help you today? </s><s>[INST] I'd like to show off how chat templating "
          "works! [/INST]");

    CHECK(render(llama3_instruct, opts("<|begin_of_text|>", "<|eot_id|>")) == llama3_expected);
    const std::string header = "<|start_header_id|>assistant<|end_header_id|>\n\n";
    CHECK(render(llama3_instruct, opts("<|begin_of_text|>", "<|eot_id|>", false)) ==
          llama3_expected.substr(0, llama3_expected.size() - header.size()));

    CHECK(render(chatml_openhermes) == chatml_expected);
    CHECK(render(chatml_openhermes, opts("", "", false)) ==
          chatml_expected.substr(0, chatml_expected.size() - std::string("<|im_start|>assistant\n").size()));
    CHECK(render(chatml_qwen2) == chatml_expected);  // a system message of its own: no default
    const std::vector<chat_message> no_system(conversation.begin() + 1, conversation.end());
    CHECK(render(chatml_qwen2, {}, no_system) ==
          "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n" + chatml_expected.substr(chatml_expected.find("<|im_start|>user")));

    CHECK(render(mistral_v02, opts("", "</s>")) == mistral_v02_expected);
    CHECK(render(mistral_v02, opts("<s>", "</s>")) == "<s>" + mistral_v02_expected);
    CHECK(render(mistral_v02, opts("<s>", "</s>"), no_system) ==
          "<s> [INST] Hello [/INST] Hi there</s> [INST] Who are you [/INST]    I am an assistant   </s> [INST] Another "
          "question [/INST]");
    // v0.1: by hand, [INST] around user turns, eos after assistant turns, no spaces added
    CHECK(render(mistral_v01, opts("<s>", "</s>"), no_system) ==
          "<s>[INST] Hello [/INST]Hi there</s>[INST] Who are you [/INST]   I am an assistant   </s>[INST] Another question "
          "[/INST]");
    // ... which has no system role: its raise_exception message reaches the caller
    refused([&] { (void)render(mistral_v01, opts("<s>", "</s>")); }, errc::invalid_argument,
            {"raise_exception", "Conversation roles must alternate user/assistant/user/assistant/...", "offset"});
    const std::vector<chat_message> two_users{{"user", "a"}, {"user", "b"}};
    refused([&] { (void)render(mistral_v02, {}, two_users); }, errc::invalid_argument,
            {"After the optional system message, conversation roles must alternate"});
    refused([&] { (void)render(llama2_chat, {}, two_users); }, errc::invalid_argument, {"Conversation roles must alternate"});
}

TEST_CASE("chat templates: the built-ins are the shipped templates") {
    CHECK(builtin_chat_template("llama2") == llama2_chat);
    CHECK(builtin_chat_template("llama3") == llama3_instruct);
    CHECK(builtin_chat_template("chatml") == chatml_openhermes);
    CHECK(builtin_chat_template("mistral") == mistral_v02);
    CHECK(render(builtin_chat_template("llama3"), opts("<|begin_of_text|>", "")) == llama3_expected);
    refused([] { (void)builtin_chat_template("vicuna"); }, errc::invalid_argument,
            {"'vicuna'", "llama2, llama3, chatml, mistral"});
}

TEST_CASE("chat templates: llama.cpp's other Jinja cases") {
    struct case_t {
        const char* name;
        const char* tmpl;
        const char* expected;
        const char* bos = "";
        const char* eos = "";
    };
    const case_t cases[] = {
        {"TheBloke/FusionNet_34Bx2_MoE-AWQ",
         "{%- for idx in range(0, messages|length) -%}\n{%- if messages[idx]['role'] == 'user' -%}\n{%- if idx > 1 -%}\n{{- "
         "bos_token + '[INST] ' + messages[idx]['content'] + ' [/INST]' -}}\n{%- else -%}\n{{- messages[idx]['content'] + ' "
         "[/INST]' -}}\n{%- endif -%}\n{% elif messages[idx]['role'] == 'system' %}\n{{- '[INST] <<SYS>>\\n' + "
         "messages[idx]['content'] + '\\n<</SYS>>\\n\\n' -}}\n{%- elif messages[idx]['role'] == 'assistant' -%}\n{{- ' '  + "
         "messages[idx]['content'] + ' ' + eos_token -}}\n{% endif %}\n{% endfor %}",
         "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST] Hi there </s><s>[INST] Who are you [/INST]    "
         "I am an assistant    </s><s>[INST] Another question [/INST]",
         "<s>", "</s>"},
        {"bofenghuang/vigogne-2-70b-chat",
         "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
         "messages[0]['content'] %}{% elif true == true and not '<<SYS>>' in messages[0]['content'] %}{% set loop_messages = "
         "messages %}{% set system_message = 'Vous êtes Vigogne, un assistant IA créé par Zaion Lab. Vous suivez extrêmement "
         "bien les instructions. Aidez autant que vous le pouvez.' %}{% else %}{% set loop_messages = messages %}{% set "
         "system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != "
         "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') "
         "}}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + "
         "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if "
         "message['role'] == 'user' %}{{ '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'system' %}{{ "
         "'<<SYS>>\\n' + content.strip() + '\\n<</SYS>>\\n\\n' }}{% elif message['role'] == 'assistant' %}{{ ' '  + "
         "content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}",
         "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST] Hi there </s>[INST] Who are you [/INST] I am "
         "an assistant </s>[INST] Another question [/INST]",
         "", "</s>"},
        {"mlabonne/AlphaMonarch-7B",
         "{% for message in messages %}{{bos_token + message['role'] + '\\n' + message['content'] + eos_token + '\\n'}}{% "
         "endfor %}{% if add_generation_prompt %}{{ bos_token + 'assistant\\n' }}{% endif %}",
         "<s>system\nYou are a helpful assistant</s>\n<s>user\nHello</s>\n<s>assistant\nHi there</s>\n<s>user\nWho are "
         "you</s>\n<s>assistant\n   I am an assistant   </s>\n<s>user\nAnother question</s>\n<s>assistant\n",
         "<s>", "</s>"},
        {"deepseek-ai/deepseek-coder-33b-instruct",
         "{% if not add_generation_prompt is defined %}\n{% set add_generation_prompt = false %}\n{% endif %}\n{%- set ns = "
         "namespace(found=false) -%}\n{%- for message in messages -%}\n    {%- if message['role'] == 'system' -%}\n        {%- "
         "set ns.found = true -%}\n    {%- endif -%}\n{%- endfor -%}\n{{bos_token}}{%- if not ns.found -%}\n{{'You are an AI "
         "programming assistant, utilizing the Deepseek Coder model, developed by Deepseek Company, and you only answer "
         "questions related to computer science. For politically sensitive questions, security and privacy issues, and other "
         "non-computer science questions, you will refuse to answer\\n'}}\n{%- endif %}\n{%- for message in messages %}\n    "
         "{%- if message['role'] == 'system' %}\n{{ message['content'] }}\n    {%- else %}\n        {%- if message['role'] == "
         "'user' %}\n{{'### Instruction:\\n' + message['content'] + '\\n'}}\n        {%- else %}\n{{'### Response:\\n' + "
         "message['content'] + '\\n<|EOT|>\\n'}}\n        {%- endif %}\n    {%- endif %}\n{%- endfor %}\n{% if "
         "add_generation_prompt %}\n{{'### Response:'}}\n{% endif %}",
         "You are a helpful assistant### Instruction:\nHello\n### Response:\nHi there\n<|EOT|>\n### Instruction:\nWho are "
         "you\n### Response:\n   I am an assistant   \n<|EOT|>\n### Instruction:\nAnother question\n### Response:\n"},
        {"eachadea/vicuna-13b-1.1",
         "{%- for message in messages %}{%- if message['role'] == 'system' -%}{{- '' + message['content'] + '\n\n' -}}{%- else "
         "-%}{%- if message['role'] == 'user' -%}{{-'USER: ' + message['content'] + '\n'-}}{%- else -%}{{-'ASSISTANT: ' + "
         "message['content'] + '</s>\n' -}}{%- endif -%}{%- endif -%}{%- endfor -%}{%- if add_generation_prompt "
         "-%}{{-'ASSISTANT:'-}}{%- endif -%}",
         "You are a helpful assistant\n\nUSER: Hello\nASSISTANT: Hi there</s>\nUSER: Who are you\nASSISTANT:    I am an "
         "assistant   </s>\nUSER: Another question\nASSISTANT:"},
        {"CohereForAI/c4ai-command-r-plus",
         "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
         "messages[0]['content'] %}{% elif false == true %}{% set loop_messages = messages %}{% set system_message = 'You are "
         "Command-R, a brilliant, sophisticated, AI-assistant trained to assist human users by providing thorough responses. "
         "You are trained by Cohere.' %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif "
         "%}{% if system_message != false %}{{ '<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>' + system_message + "
         "'<|END_OF_TURN_TOKEN|>' }}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != "
         "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') "
         "}}{% endif %}{% set content = message['content'] %}{% if message['role'] == 'user' %}{{ "
         "'<|START_OF_TURN_TOKEN|><|USER_TOKEN|>' + content.strip() + '<|END_OF_TURN_TOKEN|>' }}{% elif message['role'] == "
         "'assistant' %}{{ '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>'  + content.strip() + '<|END_OF_TURN_TOKEN|>' }}{% endif "
         "%}{% endfor %}{% if add_generation_prompt %}{{ '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' }}{% endif %}",
         "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>You are a helpful "
         "assistant<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hello<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|"
         "CHATBOT_TOKEN|>Hi there<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Who are "
         "you<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>I am an "
         "assistant<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Another "
         "question<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"},
        {"Phi-3-vision",
         "{% for message in messages %}{{'<|' + message['role'] + '|>' + '\n' + message['content'] + '<|end|>\n' }}{% endfor "
         "%}{% if add_generation_prompt and messages[-1]['role'] != 'assistant' %}{{- '<|assistant|>\n' -}}{% endif %}",
         "<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi "
         "there<|end|>\n<|user|>\nWho are you<|end|>\n<|assistant|>\n   I am an assistant   <|end|>\n<|user|>\nAnother "
         "question<|end|>\n<|assistant|>\n"},
        {"ChatGLM3",
         "{% for message in messages %}{% if loop.first %}[gMASK]sop<|{{ message['role'] }}|>\n {{ message['content'] }}{% "
         "else %}<|{{ message['role'] }}|>\n {{ message['content'] }}{% endif %}{% endfor %}{% if add_generation_prompt "
         "%}<|assistant|>{% endif %}",
         "[gMASK]sop<|system|>\n You are a helpful assistant<|user|>\n Hello<|assistant|>\n Hi there<|user|>\n Who are "
         "you<|assistant|>\n    I am an assistant   <|user|>\n Another question<|assistant|>"},
        {"MiniCPM-3B-OpenHermes-2.5-v2-GGUF",
         "{% for message in messages %}{% if message['role'] == 'user' %}{{'<用户>' + message['content'].strip() + "
         "'<AI>'}}{% else %}{{message['content'].strip()}}{% endif %}{% endfor %}",
         "You are a helpful assistant<用户>Hello<AI>Hi there<用户>Who are you<AI>I am an assistant<用户>Another "
         "question<AI>"},
        {"DeepSeek-V2",
         "{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}{{ bos_token }}{% for "
         "message in messages %}{% if message['role'] == 'user' %}{{ 'User: ' + message['content'] + '\n\n' }}{% elif "
         "message['role'] == 'assistant' %}{{ 'Assistant: ' + message['content'] + eos_token }}{% elif message['role'] == "
         "'system' %}{{ message['content'] + '\n\n' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% "
         "endif %}",
         "You are a helpful assistant\n\nUser: Hello\n\nAssistant: Hi there<｜end▁of▁sentence｜>User: Who are "
         "you\n\nAssistant:    I am an assistant   <｜end▁of▁sentence｜>User: Another question\n\nAssistant:",
         "", "<｜end▁of▁sentence｜>"},
        {"ibm-granite/granite-3.0-8b-instruct",
         "{%- if tools %}\n    {{- '<|start_of_role|>available_tools<|end_of_role|>\n' }}\n    {%- for tool in tools %}\n    "
         "{{- tool | tojson(indent=4) }}\n    {%- if not loop.last %}\n        {{- '\n\n' }}\n    {%- endif %}\n    {%- endfor "
         "%}\n    {{- '<|end_of_text|>\n' }}\n{%- endif %}\n{%- for message in messages %}\n    {%- if message['role'] == "
         "'system' %}\n    {{- '<|start_of_role|>system<|end_of_role|>' + message['content'] + '<|end_of_text|>\n' }}\n    {%- "
         "elif message['role'] == 'user' %}\n    {{- '<|start_of_role|>user<|end_of_role|>' + message['content'] + "
         "'<|end_of_text|>\n' }}\n    {%- elif message['role'] == 'assistant' %}\n    {{- "
         "'<|start_of_role|>assistant<|end_of_role|>'  + message['content'] + '<|end_of_text|>\n' }}\n    {%- elif "
         "message['role'] == 'assistant_tool_call' %}\n    {{- "
         "'<|start_of_role|>assistant<|end_of_role|><|tool_call|>' + message['content'] + '<|end_of_text|>\n' }}\n    {%- elif "
         "message['role'] == 'tool_response' %}\n    {{- '<|start_of_role|>tool_response<|end_of_role|>' + message['content'] + "
         "'<|end_of_text|>\n' }}\n    {%- endif %}\n    {%- if loop.last and add_generation_prompt %}\n    {{- "
         "'<|start_of_role|>assistant<|end_of_role|>' }}\n    {%- endif %}\n{%- endfor %}",
         "<|start_of_role|>system<|end_of_role|>You are a helpful "
         "assistant<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Hello<|end_of_text|>\n<|start_of_role|>assistant<|end_"
         "of_role|>Hi there<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Who are "
         "you<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>   I am an assistant   "
         "<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Another "
         "question<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>"},
    };
    for (const case_t& c : cases) {
        CAPTURE(c.name);
        CHECK(render(c.tmpl, opts(c.bos, c.eos)) == c.expected);
    }
}

TEST_CASE("chat templates: whitespace control as transformers configures Jinja") {
    // {%- / -%} strip all whitespace on that side; {{- -}} likewise
    CHECK(render("a  \n {%- if true -%}  \n b {%- endif %}") == "ab");
    CHECK(render("x \n {{- 'y' -}} \n z") == "xyz");
    CHECK(render("a {#- note -#} b") == "ab");
    // trim_blocks: the newline right after a block tag goes (not after {{ }})
    CHECK(render("{% if true %}\nyes\n{% endif %}\nend") == "yes\nend");
    CHECK(render("{{ 'v' }}\nw") == "v\nw");
    CHECK(render("{# c #}\nz") == "z");
    // lstrip_blocks: spaces and tabs from a line start to a block tag go (not before {{ }})
    CHECK(render("line\n  \t{% if true %}x{% endif %}") == "line\nx");
    CHECK(render("  {{ 'v' }}") == "  v");
    CHECK(render("a  {% if true %}x{% endif %}") == "a  x");  // not at a line start
    // {%+ keeps the indentation; +%} keeps the newline
    CHECK(render("  {%+ if true %}x{% endif %}") == "  x");
    CHECK(render("{% if true +%}\nx{% endif %}") == "\nx");
    // keep_trailing_newline=False: one trailing newline of the source is dropped
    CHECK(render("a\n\n") == "a\n");
    // a loop body indented between block tags, as hand-written templates are
    CHECK(render("{% for m in messages %}\n  {% if m.role == 'user' %}\n[{{ m.content }}]\n  {% endif %}\n{% endfor %}") ==
          "[Hello]\n[Who are you]\n[Another question]\n");
}

TEST_CASE("chat templates: expressions follow Jinja2") {
    // precedence: filters bind before any operator; ~ binds tighter than + (so "12" + 3 fails)
    CHECK(render("{{ 'a' + '  b ' | trim + 'c' }}") == "abc");
    template_refused("{{ 1 ~ 2 + 3 }}", errc::format, {"'+' cannot combine a string and an integer"});
    CHECK(render("{{ 1 + 2 * 3 }}|{{ (1 + 2) * 3 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ -7 % 3 }}|{{ 7 % -3 }}") == "7|9|3|-4|2|-2");
    CHECK(render("{{ not 1 == 2 }}|{{ 1 < 2 and 2 < 1 }}|{{ 0 or 'x' }}|{{ '' and 'y' }}|") == "True|False|x||");
    CHECK(render("{{ 'yes' if 1 > 0 else 'no' }}{{ 'z' if false }}") == "yes");
    // printing as Python's str()
    CHECK(render("{{ none }}|{{ true }}|{{ [1, 'a', none] }}|{{ {'k': 'v'} }}|{{ undefined_name }}|") ==
          "None|True|[1, 'a', None]|{'k': 'v'}||");
    // membership, equality across kinds
    CHECK(render("{{ 'ell' in 'hello' }}{{ 2 in [1, 2] }}{{ 'k' in {'k': 1} }}{{ 3 not in [1] }}{{ 1 == true }}{{ '1' == 1 }}") ==
          "TrueTrueTrueTrueTrueFalse");
    // subscripts and slices, by code point
    CHECK(render("{{ messages[1].content }}{{ messages[-1]['role'] }}{{ messages[9] is defined }}") == "HellouserFalse");
    CHECK(render("{{ 'abcdef'[1:4] }}|{{ 'abcdef'[::-1] }}|{{ 'abcdef'[-2:] }}|{{ [1,2,3,4][::2] }}|{{ 'héllo'[1] }}") ==
          "bcd|fedcba|ef|[1, 3]|é");
    CHECK(render("{{ messages[1:3] | length }}{{ 'héllo' | length }}") == "25");
    // tests
    CHECK(render("{{ x is defined }}{{ messages is defined }}{{ none is none }}{{ 1 is not none }}{{ 'a' is string }}"
                 "{{ 3 is odd }}{{ 4 is even }}{{ {} is mapping }}{{ 1 is eq 1 }}") ==
          "FalseTrueTrueTrueTrueTrueTrueTrueTrue");
}

TEST_CASE("chat templates: statements, loops, scopes") {
    CHECK(render("{% for m in messages %}{{ loop.index0 }}{{ loop.index }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ "
                 "loop.revindex }},{% endfor %}") ==
          "01TrueFalse66,12FalseFalse65,23FalseFalse64,34FalseFalse63,45FalseFalse62,56FalseTrue61,");
    CHECK(render("{% for m in messages if m.role == 'user' %}{{ loop.index }}{{ m.content[0] }}{% endfor %}") == "1H2W3A");
    CHECK(render("{% for x in [] %}a{% else %}empty{% endfor %}") == "empty");
    CHECK(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}") == "a=1;b=2;");
    CHECK(render("{% for i in range(3) %}{{ i }}{% endfor %}{% for i in range(5, 0, -2) %}{{ i }}{% endfor %}") == "012531");
    CHECK(render("{% if false %}a{% elif 0 %}b{% elif 'x' %}c{% else %}d{% endif %}") == "c");
    // set inside a loop does not leak out of it; namespaces carry values out
    CHECK(render("{% set x = 1 %}{% for m in [1, 2] %}{% set x = m %}{% endfor %}{{ x }}") == "1");
    CHECK(render("{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}") == "6");
    // filters and methods
    CHECK(render("{{ '  a b  ' | trim }}|{{ 'ab' | upper }}|{{ 'hello world' | title }}|{{ [1, 2] | join('-') }}|"
                 "{{ undefined_x | default('d') }}|{{ [3, 4] | first }}{{ [3, 4] | last }}|{{ 'abc' | reverse }}|"
                 "{{ 'aXbX' | replace('X', '.') }}|{{ '42' | int + 1 }}|{{ 7 | string + '!' }}") ==
          "a b|AB|Hello World|1-2|d|34|cba|a.b.|43|7!");
    CHECK(render("{{ 'xxhixx'.strip('x') }}|{{ '  hi '.lstrip() }}|{{ 'a,b'.split(',') }}|{{ 'a b'.split() | length }}|"
                 "{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith('bc') }}|{{ {'a': 1}.get('b', 2) }}|{{ 'ab'.upper() }}") ==
          "hi|hi |['a', 'b']|2|TrueTrue|2|AB");
    CHECK(render("{{ {'a': [1, true, none, 'q\"']} | tojson }}") == "{\"a\": [1, true, null, \"q\\\"\"]}");
    // the message list is what the template sees
    CHECK(render("{{ messages | length }}{{ add_generation_prompt }}{{ bos_token }}{{ eos_token }}", opts("<s>", "</s>", false)) ==
          "6False<s></s>");
}

TEST_CASE("chat templates: malformed templates are refused with the place") {
    template_refused("ab{{ x", errc::format, {"unclosed '{{'", "offset 2", "line 1, column 3"});
    template_refused("{% if x %}abc", errc::format, {"'{% if %}' is never closed", "'{% endif %}'", "offset 0"});
    template_refused("a\n{% for m in messages %}x", errc::format, {"'{% for %}' is never closed", "line 2"});
    template_refused("{% if x %}{% endfor %}", errc::format, {"'{% endfor %}'", "'{% endif %}'", "offset 10"});
    template_refused("{% endif %}", errc::format, {"without a matching opening tag"});
    template_refused("{# note", errc::format, {"unclosed comment"});
    template_refused("{{ 'abc }}", errc::format, {"unterminated string literal", "offset 3"});
    template_refused("{{ 1 + }}", errc::format, {"expected a value", "'}}'"});
    template_refused("{{ a b }}", errc::format, {"expected '}}'"});
    template_refused("{% for x y %}{% endfor %}", errc::format, {"expected 'in'"});
    template_refused("{{ 1 ? 2 }}", errc::format, {"unexpected character '?'"});
    template_refused("{{ x[] }}", errc::format, {"empty subscript"});
    template_refused("{{ 99999999999999999999 }}", errc::format, {"integer literal too large"});
}

TEST_CASE("chat templates: unsupported Jinja is named") {
    template_refused("{{ 'a' | frobnicate }}", errc::unsupported, {"filter 'frobnicate'", "offset 9"});
    template_refused("{% macro f() %}{% endmacro %}", errc::unsupported, {"statement '{% macro %}'"});
    template_refused("{{ 1.5 }}", errc::unsupported, {"floating-point"});
    template_refused("{{ 4 / 2 }}", errc::unsupported, {"'/'"});
    template_refused("{{ strftime_now('%Y') }}", errc::unsupported, {"function 'strftime_now()'"});
    template_refused("{{ 'a'.zfill(3) }}", errc::unsupported, {"method 'zfill()' of a string"});
    template_refused("{{ 1 is prime }}", errc::unsupported, {"test 'prime'"});
    template_refused("{% set ns = namespace(a=1) %}{% set ns.b = ns %}", errc::unsupported, {"namespace() stored inside"});
    // unsupported parts that are never reached do not stop a template (granite's tojson(indent=4) above)
    CHECK(render("{% if false %}{{ x | frobnicate }}{% endif %}ok") == "ok");
    // runtime type errors name the operator
    template_refused("{{ 'a' + 1 }}", errc::format, {"'+' cannot combine a string and an integer"});
    template_refused("{{ 1 // 0 }}", errc::format, {"division or modulo by zero"});
    template_refused("{{ undefined_y.attr }}", errc::format, {"'attr' of an undefined value"});
    template_refused("{{ raise_exception('no ' ~ 'way') }}", errc::invalid_argument, {"raise_exception: no way"});
}

TEST_CASE("chat templates: hostile templates hit bounds, not the stack or the clock") {
    const std::string parens = "{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}";
    template_refused(parens, errc::format, {"nesting deeper than"});
    std::string ifs;
    for (int n = 0; n < 10000; ++n) ifs += "{% if true %}";
    template_refused(ifs, errc::format, {"nesting deeper than"});
    std::string chain = "{{ 1";
    for (int n = 0; n < 100000; ++n) chain += " + 1";
    template_refused(chain + " }}", errc::format, {"expression nested deeper than"});
    std::string filters = "{{ 'a'";
    for (int n = 0; n < 100000; ++n) filters += "|trim";
    template_refused(filters + " }}", errc::format, {"expression nested deeper than"});
    std::string nots = "{{ ";
    for (int n = 0; n < 100000; ++n) nots += "not ";
    template_refused(nots + "1 }}", errc::format, {"nesting deeper than"});
    template_refused("{% set x = [] %}{% for i in range(100) %}{% set x = [x] %}{% endfor %}", errc::format,
                     {"values nested deeper than"});
    // a nested value built in a loop body stays loop-local; built with a namespace, it is refused by depth
    template_refused("{% set ns = namespace(x=[]) %}{% for i in range(100) %}{% set ns.x = [ns.x] %}{% endfor %}", errc::format,
                     {"values nested deeper than"});
    // work and size
    chat_options small;
    small.max_output_bytes = 1000;
    small.max_steps = 100000;
    template_refused("{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(1000) %}{% endfor %}{% endfor "
                     "%}{% endfor %}",
                     errc::out_of_memory, {"max_steps"}, small);
    template_refused("{% for i in range(200) %}0123456789{% endfor %}", errc::out_of_memory, {"max_output_bytes"}, small);
    template_refused("{{ 'ab' * 1000 }}", errc::out_of_memory, {"max_output_bytes"}, small);
    template_refused("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
                     errc::out_of_memory, {"exceeds max_output_bytes"}, small);
    template_refused("{{ range(10000000000) | length }}", errc::out_of_memory, {"range()"});
    // shared elements: small in memory, huge to walk (8^3 copies of a 10^5 list)
    const std::string dag = "{% set r = range(100000) %}{% set a = [r, r, r, r, r, r, r, r] %}"
                            "{% set b = [a, a, a, a, a, a, a, a] %}{% set c = [b, b, b, b, b, b, b, b] %}";
    template_refused(dag + "{{ c }}", errc::out_of_memory, {"exceeds max_output_bytes"}, small);
    template_refused(dag + "{{ c | tojson }}", errc::out_of_memory, {"exceeds max_output_bytes"}, small);
    template_refused(dag + "{{ c == c }}", errc::out_of_memory, {"max_steps"}, small);
    template_refused(dag + "{{ c in [1, c] }}", errc::out_of_memory, {"max_steps"}, small);
    template_refused(dag + "{% set ns = namespace(x=c) %}", errc::out_of_memory, {"max_steps"}, small);
    template_refused("{{ 9223372036854775807 + 1 }}", errc::format, {"integer overflow"});
}

TEST_CASE("chat templates: truncated and mutated templates fail only with tessera::error") {
    const std::string_view sources[] = {llama2_chat, llama3_instruct, chatml_qwen2, mistral_v02, mistral_v01};
    chat_options o = opts("<s>", "</s>");
    o.max_steps = 100000;
    o.max_output_bytes = 1 << 16;
    std::size_t rendered = 0, refused_n = 0;
    auto attempt = [&](std::string_view t) {
        try {
            (void)apply_chat_template(t, conversation, o);
            ++rendered;
        } catch (const tessera::error&) {
            ++refused_n;
        }
        // anything else (std::bad_alloc, std::out_of_range, a crash) fails the test
    };
    for (std::string_view s : sources)
        for (std::size_t n = 0; n <= s.size(); ++n) attempt(s.substr(0, n));
    std::mt19937 rng(12345);
    static constexpr std::string_view alphabet = "{}%#-+()[]'\" |.,:~=<>!*/0123456789abcdefinortsx_\n\\";
    for (int round = 0; round < 4000; ++round) {
        std::string t(sources[rng() % std::size(sources)]);
        const int edits = 1 + static_cast<int>(rng() % 4);
        for (int k = 0; k < edits && !t.empty(); ++k) {
            const std::size_t at = rng() % t.size();
            switch (rng() % 3) {
                case 0: t[at] = alphabet[rng() % alphabet.size()]; break;
                case 1: t.erase(at, 1 + rng() % 8); break;
                default: t.insert(at, std::string(1 + rng() % 3, alphabet[rng() % alphabet.size()])); break;
            }
        }
        attempt(t);
    }
    // both outcomes occur: the mutations are neither all harmless nor all fatal
    CHECK(rendered > 100);
    CHECK(refused_n > 100);
}

TEST_CASE("chat templates: from GGUF metadata and --chat-template values") {
    using namespace tessera::gguf;
    writer w;
    w.set("tokenizer.chat_template", chatml_openhermes);
    w.set("tokenizer.chat_template.tool_use", "{{ 'tools' }}");
    const std::vector<std::byte> bytes = w.to_bytes();
    const file f = file::from_buffer(bytes);
    CHECK(chat_template_from_metadata(f.meta()) == std::string(chatml_openhermes));
    CHECK(chat_template_from_metadata(f.meta(), "tool_use") == "{{ 'tools' }}");
    CHECK(!chat_template_from_metadata(f.meta(), "rag").has_value());
    CHECK(resolve_chat_template("", f.meta()) == chatml_openhermes);
    CHECK(resolve_chat_template("llama3", f.meta()) == llama3_instruct);
    CHECK(resolve_chat_template("{{ 'x' }}", f.meta()) == "{{ 'x' }}");
    refused([&] { (void)resolve_chat_template("vicuna", f.meta()); }, errc::invalid_argument, {"'vicuna'", "llama2"});

    writer none;
    none.set("general.name", "no template");
    const std::vector<std::byte> none_bytes = none.to_bytes();
    const file g = file::from_buffer(none_bytes);
    refused([&] { (void)resolve_chat_template("", g.meta()); }, errc::invalid_argument, {"no tokenizer.chat_template"});

    writer wrong;
    wrong.set<std::uint32_t>("tokenizer.chat_template", 7);
    const std::vector<std::byte> wrong_bytes = wrong.to_bytes();
    const file h = file::from_buffer(wrong_bytes);
    refused([&] { (void)chat_template_from_metadata(h.meta()); }, errc::invalid_argument, {"tokenizer.chat_template"});

    // bos_token / eos_token are the vocabulary's BOS and EOS texts (llama: ids 1 and 2)
    vocab_source src;
    src.model = "llama";
    src.tokens = {"<unk>", "<s>", "</s>", "<0x0A>", "\xE2\x96\x81", "a"};
    src.types = {2, 3, 3, 6, 1, 1};
    const chat_options vo = chat_options_from_vocab(vocab(src));
    CHECK(vo.bos_token == "<s>");
    CHECK(vo.eos_token == "</s>");
    CHECK(vo.add_generation_prompt);
    CHECK(chat_template(resolve_chat_template("llama2", f.meta())).apply(conversation, vo) == llama2_expected);
}
