module meridian/httpload

go 1.26.0
