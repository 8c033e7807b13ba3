#!/usr/bin/env python3
"""Checks the generate example end to end.

usage: check_generate.py GENERATE

- the random-model demo (no -m) runs, writes the prompt then generated text to stdout
  and the speeds to stderr;
- (stories260K against llama.cpp's greedy text: check_generate_stories.py, which needs
  ../shared/data)
- each generation option has the effect it claims (checked on the random demo model,
  against definitions computed here from --logits-out where a stage can be checked on
  the first step's logits);
- bad arguments and a missing model fail with exit status 2 / 1 and a clear message.
"""
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

# A cross build runs the program through the emulator meson names (MESON_EXE_WRAPPER).
exe = shlex.split(os.environ.get("MESON_EXE_WRAPPER", "")) + [sys.argv[1]]
failures = 0


def run(args, stdin=b""):
    p = subprocess.run(exe + args, capture_output=True, timeout=300, input=stdin)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def check(cond, what, detail=""):
    global failures
    if cond:
        print("ok  ", what)
    else:
        failures += 1
        print("FAIL", what, detail)


# the random-weight demo
rc, out, err = run(["-p", "Once upon a time", "-n", "12", "-t", "2"])
check(rc == 0, "random demo exits 0", err)
check(out.startswith("Once upon a time") and out.endswith("\n"), "random demo stdout = prompt + text", repr(out))
check("random-weight llama model" in err and "tokens/s" in err, "random demo reports the model and speeds on stderr", err)
rc2, out2, _ = run(["-p", "Once upon a time", "-n", "12", "-t", "1", "--random-type", "q4_0"])
check(rc2 == 0 and out2.startswith("Once upon a time"), "random demo with q4_0 weights")
rc3, out3, _ = run(["-p", "Once upon a time", "-n", "12", "--temp", "0.9", "--seed", "3"])
rc4, out4, _ = run(["-p", "Once upon a time", "-n", "12", "--temp", "0.9", "--seed", "3"])
check(rc3 == 0 and out3 == out4, "sampling with a seed is reproducible")

# --- generation options, on the random demo ----------------------------------------------
tmp = tempfile.mkdtemp(prefix="check_generate.")
P = "Once upon a time"


def gen(extra, n=16, stdin=b""):
    """(stdout, prompt ids, generated ids, n_vocab) of a run that must succeed."""
    rc, out, err = run(["-p", P, "-n", str(n), "-t", "1", "-v"] + extra, stdin)
    if rc != 0:
        check(False, "run %s" % extra, err)
        return out, [], [], 0
    ids = lambda what: [int(x) for x in re.search(r"generate: %s ids:([ 0-9]*)\n" % what, err).group(1).split()]
    return out, ids("prompt"), ids("generated"), int(re.search(r"n_vocab (\d+)", err).group(1))


greedy_out, prompt_ids, greedy_ids, n_vocab = gen([])
greedy_text = greedy_out[len(P):-1]
check(len(greedy_ids) == 16 and len(set(greedy_ids)) < 16, "greedy repeats tokens (so the penalty checks mean something)",
      greedy_ids)
# the default is greedy, as before: explicit neutral values of every new option change nothing
neutral = ["--min-p", "0", "--typical", "1", "--repeat-penalty", "1", "--presence-penalty", "0", "--frequency-penalty", "0",
           "--dynatemp-range", "0", "--mirostat", "0", "--temp", "0"]
check(gen(neutral)[0] == greedy_out, "neutral option values leave greedy output unchanged")

# --logits-out: n_vocab finite numbers whose argmax is the greedy token
lo = os.path.join(tmp, "logits.json")
_, _, ids1, _ = gen(["--logits-out", lo], n=1)
logits = json.load(open(lo)) if os.path.exists(lo) else []
check(len(logits) == n_vocab and all(isinstance(x, (int, float)) and math.isfinite(x) for x in logits),
      "--logits-out writes n_vocab finite numbers", "%d of %d" % (len(logits), n_vocab))
check(logits and ids1 == [max(range(len(logits)), key=lambda i: (logits[i], -i))] == greedy_ids[:1],
      "--logits-out's argmax is the greedy token", (ids1, greedy_ids[:1]))
check(not [f for f in os.listdir(tmp) if ".tmp." in f], "--logits-out leaves no temporary file")
rc, out, err = run(["-n", "1", "--logits-out", os.path.join(tmp, "no", "such", "l.json")])
check(rc == 1 and "--logits-out" in err and out == "", "--logits-out into a missing folder fails first", err)

# the first step's distribution at temperature 1, for the stage checks below
top = max(logits)
w = [math.exp(x - top) for x in logits]
probs = [x / sum(w) for x in w]
by_p = sorted(range(n_vocab), key=lambda i: (-probs[i], i))


def first_tokens(extra, seeds=range(1, 13)):
    return {gen(extra + ["-s", str(s)], n=1)[2][0] for s in seeds}


# --min-p: the first token always has p >= min_p * p_max; 1.0 at any temperature is greedy
for mp in (0.3, 0.7):
    allowed = {i for i in range(n_vocab) if probs[i] >= mp * probs[by_p[0]] * (1 - 1e-6)}
    got = first_tokens(["--temp", "1", "--top-k", "0", "--top-p", "1", "--min-p", str(mp)])
    check(got <= allowed, "--min-p %g: first tokens within p >= %g p_max" % (mp, mp), (got, allowed))
check(gen(["--temp", "5", "--min-p", "1", "-s", "4"])[0] == greedy_out, "--min-p 1 with --temp 5 is greedy")
# -s is --seed
a = gen(["--temp", "0.9", "-s", "3"])[0]
check(a == gen(["--temp", "0.9", "--seed", "3"])[0], "-s 3 equals --seed 3")
check(a != gen(["--temp", "0.9", "-s", "4"])[0] and a != greedy_out, "another seed samples other text")
# --typical 0 keeps the single token whose surprise is nearest the entropy (Meister et al.)
h = -sum(p * math.log(p) for p in probs if p > 0)
most_typical = min(range(n_vocab), key=lambda i: (abs(-math.log(probs[i]) - h) if probs[i] > 0 else math.inf, -probs[i], i))
got = first_tokens(["--temp", "1", "--top-k", "0", "--top-p", "1", "--typical", "0"], seeds=range(1, 4))
check(got == {most_typical}, "--typical 0: the most typical token", (got, most_typical))
typ_set, mass = set(), 0.0
for i in sorted(range(n_vocab), key=lambda i: abs(-math.log(probs[i]) - h) if probs[i] > 0 else math.inf):
    typ_set.add(i)
    mass += probs[i]
    if mass > 0.3:
        break
got = first_tokens(["--temp", "1", "--top-k", "0", "--top-p", "1", "--typical", "0.3"])
check(got <= typ_set, "--typical 0.3: first tokens within the typical set", (got, typ_set))

# penalties (the prompt's tokens are in the history, as in llama.cpp)
_, _, ids, _ = gen(["--repeat-penalty", "1e6", "--repeat-last-n", "-1"])
check(len(ids) == 16 and len(set(ids)) == 16 and not set(ids) & set(prompt_ids),
      "--repeat-penalty 1e6: no token repeats, none from the prompt", ids)
check(gen(["--repeat-penalty", "1e6", "--repeat-last-n", "0"])[0] == greedy_out, "--repeat-last-n 0 turns the penalties off")
_, _, ids, _ = gen(["--presence-penalty", "1e6", "--repeat-last-n", "3"])
hist = prompt_ids + ids
check(len(ids) == 16 and all(hist[len(prompt_ids) + k] not in hist[len(prompt_ids) + k - 3:len(prompt_ids) + k] for k in range(16)),
      "--repeat-last-n 3 with --presence-penalty: no token among the 3 before it", ids)
_, _, ids, _ = gen(["--presence-penalty", "1e6", "--repeat-last-n", "-1"])
check(len(set(ids)) == 16 and not set(ids) & set(prompt_ids), "--presence-penalty 1e6: no token repeats", ids)
_, _, ids, _ = gen(["--presence-penalty", "-1e4", "--repeat-last-n", "-1"])
check(set(ids) <= set(prompt_ids), "--presence-penalty -1e4: only the prompt's tokens", ids)
# frequency counts occurrences: -1e4 favours the prompt's most frequent token, then that one forever
counts = {t: prompt_ids.count(t) for t in prompt_ids}
most = {t for t, c in counts.items() if c == max(counts.values())}
_, _, ids, _ = gen(["--frequency-penalty", "-1e4", "--repeat-last-n", "-1"])
check(len(set(ids)) == 1 and ids[0] in most, "--frequency-penalty -1e4: the most frequent prompt token, repeated", (ids, most))
_, _, ids, _ = gen(["--frequency-penalty", "1e6", "--repeat-last-n", "-1"])
check(len(set(ids)) == 16, "--frequency-penalty 1e6: no token repeats", ids)

# dynamic temperature: exponent 0 always takes temp + range
check(gen(["--temp", "1", "--dynatemp-range", "2", "--dynatemp-exp", "0", "-s", "5"])[0] ==
      gen(["--temp", "3", "-s", "5"])[0], "--dynatemp-exp 0: the temperature is temp + range")
d = gen(["--temp", "0", "--dynatemp-range", "3", "-s", "5"])[0]
check(d != greedy_out and d == gen(["--temp", "0", "--dynatemp-range", "3", "-s", "5"])[0],
      "--dynatemp-range 3 from --temp 0 samples, reproducibly")

# mirostat
for v in ("1", "2"):
    m1 = gen(["--temp", "1", "--mirostat", v, "-s", "7"])[0]
    check(m1 == gen(["--temp", "1", "--mirostat", v, "-s", "7"])[0] and m1 != gen(["--temp", "1", "--mirostat", v, "-s", "8"])[0],
          "--mirostat %s is reproducible with a seed, and seeds differ" % v)
# the first step against the definitions (Basu et al.), mu = 2 tau: v1 keeps the
# k = (e 2^mu / (1 - N^-e))^(1/s) most likely (s fitted over the 100 most likely, e = s - 1),
# v2 the tokens of surprise -log2 p <= mu
sp = [probs[i] for i in by_p]
tb = sum(math.log((i + 2) / (i + 1)) * math.log(sp[i] / sp[i + 1]) for i in range(99) if sp[i + 1] > 0)
tt = sum(math.log((i + 2) / (i + 1)) ** 2 for i in range(99) if sp[i + 1] > 0)
s_hat = tb / tt
for tau in (1.5, 3.0):
    e = s_hat - 1
    k = int(min(max((e * 2 ** (2 * tau) / (1 - n_vocab ** -e)) ** (1 / s_hat), 1), n_vocab))
    got = first_tokens(["--temp", "1", "--mirostat", "1", "--mirostat-ent", str(tau)])
    check(got <= set(by_p[:k]), "--mirostat 1 --mirostat-ent %g: first tokens within the top k = %d" % (tau, k), got)
    kept = {i for i in range(n_vocab) if probs[i] > 0 and -math.log2(probs[i]) <= 2 * tau} or {by_p[0]}
    got = first_tokens(["--temp", "1", "--mirostat", "2", "--mirostat-ent", str(tau)])
    check(got <= kept, "--mirostat 2 --mirostat-ent %g: first tokens of surprise <= %g bits (%d tokens)" % (tau, 2 * tau, len(kept)),
          got)
# tau 0: v2 keeps only the most likely token (its surprise after renormalizing is 0, so mu stays 0)
check(gen(["--temp", "1", "--mirostat", "2", "--mirostat-ent", "0", "-s", "9"])[0] == greedy_out,
      "--mirostat 2 --mirostat-ent 0 is greedy")
check(gen(["--temp", "1", "--mirostat", "2", "--mirostat-ent", "3", "--mirostat-lr", "0", "-s", "9"])[0] !=
      gen(["--temp", "1", "--mirostat", "2", "--mirostat-ent", "3", "--mirostat-lr", "1", "-s", "9"])[0],
      "--mirostat-lr changes what mirostat keeps")

# -f equals -p; -e; --no-display-prompt
pf = os.path.join(tmp, "prompt.txt")
with open(pf, "w") as f:
    f.write(P + "\n")
rc, out, err = run(["-f", pf, "-n", "16", "-t", "1"])
check(rc == 0 and out == greedy_out, "-f FILE equals -p with its text", (out, greedy_out))
e1 = run(["-e", "-p", "a\\nb\\x41", "-n", "8", "-v"])
e2 = run(["-p", "a\nbA", "-n", "8", "-v"])
e3 = run(["-p", "a\\nb\\x41", "-n", "8", "-v"])
ids_of = lambda r: re.search(r"prompt ids:([ 0-9]*)", r[2]).group(1)
check(e1[0] == 0 and e1[1] == e2[1] and ids_of(e1) == ids_of(e2), "-e turns \\n and \\x41 into a newline and 'A'")
check(ids_of(e1) != ids_of(e3) and e3[1].startswith("a\\nb\\x41"), "without -e the backslashes stay")
rc, out, err = run(["-p", P, "-n", "16", "-t", "1", "--no-display-prompt"])
check(rc == 0 and out == greedy_text + "\n", "--no-display-prompt writes only the generated text", repr(out))

# -r stops where the generated text reaches the reverse prompt
long_out, _, long_ids, _ = gen([], n=32)
long_text = long_out[len(P):-1]
rp = long_text[4:7]
out, _, ids, _ = gen(["-r", rp], n=32)
gen_text = out[len(P):-1]
before_last = gen([], n=len(ids) - 1)[0][len(P):-1]  # the text before the last piece
check(long_text.startswith(gen_text) and rp in gen_text and len(ids) < 32 and rp not in before_last,
      "-r %r stops at the piece that completes it" % rp, (gen_text, long_text))
out_e, _, _, _ = gen(["-e", "-r", "\\x" + "%02x" % ord(rp[0]) + rp[1:]], n=32)
check(out_e == out, "-e applies to reverse prompts")

# -i: end of input at once is the plain run; each line gives another turn of -n tokens
out, _, ids, _ = gen(["-i"], n=6, stdin=b"")
check(out == gen([], n=6)[0], "-i with no input is a plain run")
out_a, _, ids_a, _ = gen(["-i"], n=6, stdin=b"dog\ncat\n")
out_b, _, ids_b, _ = gen(["-i"], n=6, stdin=b"park\ncat\n")
first = gen([], n=6)[0][:-1]
check(len(ids_a) == 18 and out_a.startswith(first) and ids_a[:6] == ids_b[:6], "-i: two lines, three turns of 6 tokens",
      (len(ids_a), out_a))
check(ids_a[6:] != ids_b[6:], "-i: the line read is what the model continues from", (ids_a, ids_b))
out_c, _, ids_c, _ = gen(["-i"], n=6, stdin=b"dog")  # a last line without a newline counts
check(ids_c == ids_a[:12], "-i: a last line without a newline", (ids_c, ids_a))
out_r, _, ids_r, _ = gen(["-i", "-r", rp], n=32, stdin=b"dog\n")
check(len(ids_r) > len(gen(["-r", rp], n=32)[2]) and out_r.startswith(P + gen_text),
      "-i -r: the reverse prompt hands over to the next line", out_r)

# loading progress (-q silences it)
rc, _, err = run(["-p", P, "-n", "2", "-t", "1"])
m = re.search(r"generate: loaded (\d+)/(\d+) weights, ([0-9.]+)/([0-9.]+) MiB, ([0-9.]+) MB/s", err)
check(rc == 0 and m is not None and m.group(1) == m.group(2) and int(m.group(1)) > 0 and m.group(3) == m.group(4),
      "loading reports done/total weights, MiB and MB/s", err)
rc, _, err = run(["-p", P, "-n", "2", "-t", "1", "-q"])
check(rc == 0 and "loaded" not in err and "loading" not in err, "-q: no loading progress", err)

# chat templates: the prompt (and each -i line) as user messages of a template
CHATML = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
rc, out, err = run(["--chat-template", "chatml", "-sys", "Be brief.", "-p", "Hi", "-n", "4", "-t", "1", "-v"])
check(rc == 0 and out.startswith(CHATML) and ("generate: chat prompt: " + CHATML) in err,
      "--chat-template chatml -sys: the prompt rendered by the template", repr(out))
rc, out, _ = run(["--chat-template", "llama2", "-p", "Hi", "-n", "4", "-t", "1"])
check(rc == 0 and out.startswith("<s>[INST] Hi [/INST]"), "--chat-template llama2", repr(out))
rc, out, _ = run(["--chat-template", "{{ messages[0]['content'] | upper }}!", "-p", "hi", "-n", "2", "-t", "1"])
check(rc == 0 and out.startswith("HI!"), "--chat-template with a Jinja template text", repr(out))
rc, out, err = run(["--chat-template", "chatml", "-p", "Hi", "-n", "3", "-t", "1", "-i", "-v"], b"again\n")
check(rc == 0 and "generate: chat turn: <|im_end|>" not in err and
      "<|im_start|>user\nagain<|im_end|>\n<|im_start|>assistant\n" in err.split("generate: chat turn: ")[-1],
      "-i with a chat template: the line becomes the next user message", err)
rc, out, err = run(["-cnv", "-p", "Hi", "-n", "2", "-t", "1"])
check(rc == 1 and "tokenizer.chat_template" in err and out == "", "-cnv on a model without a template: a clear error", err)
rc, out, err = run(["--chat-template", "nosuch", "-p", "Hi", "-n", "2", "-t", "1"])
check(rc == 1 and "nosuch" in err and "chatml" in err, "--chat-template with an unknown name lists the known ones", err)

# bad input
for args, code, text in (
    (["--bogus"], 2, "error: invalid argument: --bogus"),
    (["-n"], 2, "needs a value"),
    (["-n", "abc"], 2, "wants an integer"),
    (["--kv", "q4_0"], 2, "--kv"),
    (["--top-p", "0"], 2, "--top-p"),
    (["--min-p", "1.5"], 2, "--min-p"),
    (["--typical", "-1"], 2, "--typical"),
    (["--repeat-penalty", "0"], 2, "--repeat-penalty"),
    (["--repeat-last-n", "-2"], 2, "--repeat-last-n"),
    (["--presence-penalty", "nan"], 2, "--presence-penalty"),
    (["--frequency-penalty", "x"], 2, "--frequency-penalty"),
    (["--dynatemp-range", "-1"], 2, "--dynatemp-range"),
    (["--dynatemp-exp", "-1"], 2, "--dynatemp-exp"),
    (["--mirostat", "3"], 2, "--mirostat"),
    (["--mirostat-lr", "-1"], 2, "--mirostat-lr"),
    (["--mirostat-ent", "inf"], 2, "--mirostat-ent"),
    (["-s", "-1"], 2, "-s"),
    (["-r", ""], 2, "-r"),
    (["-p", "x", "-f", "/dev/null"], 2, "give the prompt once"),
    (["-f", "/nonexistent/prompt.txt"], 1, "/nonexistent/prompt.txt"),
    (["--logits-out", ""], 2, "--logits-out"),
    (["-m", "/nonexistent/model.gguf"], 1, "/nonexistent/model.gguf"),
):
    rc, out, err = run(args)
    check(rc == code and text in err and out == "", "bad arguments %s -> exit %d" % (args, code), "rc=%d err=%r" % (rc, err))

shutil.rmtree(tmp, ignore_errors=True)
print("%d failure(s)" % failures)
sys.exit(1 if failures else 0)
