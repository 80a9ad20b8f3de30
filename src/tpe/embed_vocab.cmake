# embed_vocab.cmake - writes OUT, a C source holding the bytes of IN (the
# default TPE vocabulary, src/tpe/default.vocab) as tpe_default_vocab[],
# so that the library carries it and needs no path at run time.
#   cmake -DIN=default.vocab -DOUT=tpe_default_vocab.c -P embed_vocab.cmake
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n    " bytes "${bytes}")
file(WRITE "${OUT}.tmp"
  "/* Generated from src/tpe/default.vocab by src/tpe/embed_vocab.cmake; do not edit. */\n"
  "#include <stddef.h>\n"
  "const unsigned char tpe_default_vocab[] = {\n    ${bytes}0};\n"
  "const size_t tpe_default_vocab_len = ${len};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
