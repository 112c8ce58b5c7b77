# cmake -DINPUT=file -DOUTPUT=header -DNAME=identifier [-DSPLICE=file] -P embed_text.cmake
# Writes `inline constexpr std::string_view NAME` holding INPUT's bytes, as a list of raw-string
# pieces (each under the 64 KiB some compilers allow one literal). With SPLICE, the line
# "<!-- kvpool:common -->" of INPUT is replaced by SPLICE's bytes (what both status pages share).
file(READ ${INPUT} text)
if(SPLICE)
  file(READ ${SPLICE} common)
  string(REPLACE "<!-- kvpool:common -->" "${common}" text "${text}")
endif()
string(LENGTH "${text}" len)
set(out "// Generated from ${INPUT} by cmake/embed_text.cmake: do not edit.\n#pragma once\n#include <string_view>\nnamespace kvpool {\ninline constexpr std::string_view ${NAME} =\n")
set(pos 0)
while(pos LESS len)
  string(SUBSTRING "${text}" ${pos} 16000 piece)
  string(APPEND out "    R\"kvpool_embed(${piece})kvpool_embed\"\n")
  math(EXPR pos "${pos} + 16000")
endwhile()
string(APPEND out "    ;\n}  // namespace kvpool\n")
file(WRITE ${OUTPUT} "${out}")
