# embed.cmake - write the HTML report's style sheet and script as C strings:
#   cmake -DDIR=tools/html -DOUT=html_assets.c -P embed.cmake
set(body "/* generated from tools/html/report.css and report.js by embed.cmake: edit those */\n")
foreach(pair "cli_html_css=report.css" "cli_html_js=report.js")
	string(REPLACE "=" ";" pair "${pair}")
	list(GET pair 0 name)
	list(GET pair 1 file)
	file(READ "${DIR}/${file}" hex HEX)
	string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
	string(REGEX REPLACE "((0x..,){16})" "\\1\n\t" hex "${hex}")
	string(APPEND body "const char ${name}[] = {\n\t${hex}0x00\n};\n")
endforeach()
file(WRITE "${OUT}.tmp" "${body}")
file(RENAME "${OUT}.tmp" "${OUT}")
