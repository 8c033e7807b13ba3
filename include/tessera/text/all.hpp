// tessera::text: every header of the text layer.
#pragma once

#include "tessera/text/bpe.hpp"
#include "tessera/text/chat_template.hpp"
#include "tessera/text/chat_template_gguf.hpp"
#include "tessera/text/load.hpp"
#include "tessera/text/pretokenize.hpp"
#include "tessera/text/regex.hpp"
#include "tessera/text/spm.hpp"
#include "tessera/text/tokenizer.hpp"
#include "tessera/text/ugm.hpp"
#include "tessera/text/unicode.hpp"
#include "tessera/text/unicode_data.hpp"
#include "tessera/text/vocab.hpp"
#include "tessera/text/wpm.hpp"
