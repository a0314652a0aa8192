from socium.cli.main import app

app(prog_name="socium")
