# embed_vocab.cmake - writes OUT, a C source holding the bytes of IN (the
# default TPE vocabulary, src/tpe/default.vocab; also the default model) as
# VAR[] and VAR_len (VAR: tpe_default_vocab unless given), so that the
# library carries it and needs no path at run time. An IN that does not
# exist gives an empty array (no default model built).
#   cmake -DIN=default.vocab -DOUT=tpe_default_vocab.c [-DVAR=name] -P embed_vocab.cmake
if(NOT VAR)
  set(VAR tpe_default_vocab)
endif()
set(hex "")
if(EXISTS "${IN}")
  file(READ "${IN}" hex HEX)
endif()
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n    " bytes "${bytes}")
file(WRITE "${OUT}.tmp"
  "/* Generated from ${IN} by src/tpe/embed_vocab.cmake; do not edit. */\n"
  "#include <stddef.h>\n"
  "const unsigned char ${VAR}[] = {\n    ${bytes}0};\n"
  "const size_t ${VAR}_len = ${len};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
