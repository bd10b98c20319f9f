X=(a "b c"
  $Y)
cat <<-EOF
	z
	EOF
f ${A:-"1"} $(b `c`) 2>&1 | g
