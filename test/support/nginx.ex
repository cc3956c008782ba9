defmodule ExZarr.Test.Nginx do
  @moduledoc """
  Runs nginx (Debian's package, installed by `scripts/install-nginx`) for the HTTP store
  tests: in the foreground, on 127.0.0.1 and free ports, with a generated config and its
  logs in a temporary directory, serving the files under `root`.

  Paths served (each over http, and over https with a test CA when `tls: true`):
    * `/...` - the files, with byte ranges,
    * `/norange/...` - the same files from a server that ignores `Range` (200, whole body),
    * `/moved/...` - a permanent redirect to `/...`,
    * `/tolocalhost/...` - the same, to the origin `localhost:port` (another origin),
    * `/private/...` - 403 for everything,
    * `/token/...` - the files for requests with `Authorization: Bearer s3cret`, else 401,
    * `/encoded/...` - the files with a (false) `Content-Encoding: gzip`.

  Every request is logged; `requests/1` reads the log (what was asked, the status and the
  body bytes sent), which is how tests count what a read transferred.

      {:ok, nginx} = ExZarr.Test.Nginx.start(root, tls: true)
      ExZarr.Test.Nginx.url(nginx) <> "/v3/a.zarr"
      ExZarr.Test.Nginx.stop(nginx)
  """

  alias ExZarr.Test.Server

  @token "s3cret"
  # The path of the requests that settle the log (see settle/1).
  @settle "/__settle_"

  @type t :: %{
          server: Server.t(),
          dir: String.t(),
          http_port: :inet.port_number(),
          https_port: :inet.port_number() | nil,
          ca: String.t() | nil
        }

  @doc """
  Installs nginx if needed and starts it serving `root`; `tls: true` adds an https server
  with a certificate for 127.0.0.1 and localhost from a fresh test CA (`nginx.ca`, a PEM
  file). `{:error, reason}` when nginx cannot be installed.
  """
  @spec start(String.t(), keyword()) :: {:ok, t()} | {:error, String.t()}
  def start(root, opts \\ []) do
    with {:ok, bin} <- Server.install("scripts/install-nginx") do
      random = Base.encode16(:crypto.strong_rand_bytes(6), case: :lower)
      dir = Path.join(System.tmp_dir!(), "ex_zarr_nginx_" <> random)
      File.mkdir_p!(dir)
      [http_port, https_port] = Server.free_ports(2)
      tls = if Keyword.get(opts, :tls, false), do: Map.put(test_ca!(ca_dir!()), :port, https_port)
      File.write!(Path.join(dir, "nginx.conf"), config(dir, Path.expand(root), http_port, tls))
      args = fn _port -> ["-e", Path.join(dir, "error.log"), "-p", dir, "-c", "nginx.conf"] end
      server = Server.start!(bin, args, port: http_port)

      {:ok,
       %{
         server: server,
         dir: dir,
         http_port: http_port,
         https_port: tls && https_port,
         ca: tls && tls.ca
       }}
    end
  end

  @doc "Stops nginx and deletes its directory."
  @spec stop(t()) :: :ok
  def stop(nginx) do
    Server.stop(nginx.server)
    File.rm_rf!(nginx.dir)
    :ok
  end

  @doc "The http base URL, or the https one with `:https`."
  @spec url(t(), :http | :https) :: String.t()
  def url(nginx, scheme \\ :http)
  def url(nginx, :http), do: "http://127.0.0.1:#{nginx.http_port}"
  def url(nginx, :https), do: "https://127.0.0.1:#{nginx.https_port}"

  @doc "The bearer token `/token/` asks for."
  @spec token() :: String.t()
  def token, do: @token

  @doc """
  The requests served so far, oldest first: `%{method, uri, status, bytes, range}` (`bytes`
  counts the body sent; `range` is the request's `Range` header or `nil`).
  """
  @spec requests(t()) :: [map()]
  def requests(nginx) do
    settle(nginx)

    for line <- String.split(File.read!(log(nginx)), "\n", trim: true),
        [method, uri, status, bytes, range] = String.split(line, "\t"),
        not String.starts_with?(uri, @settle) do
      %{
        method: method,
        uri: uri,
        status: String.to_integer(status),
        bytes: String.to_integer(bytes),
        range: if(range == "-", do: nil, else: range)
      }
    end
  end

  @doc "Empties the request log."
  @spec clear_requests(t()) :: :ok
  def clear_requests(nginx) do
    settle(nginx)
    File.write!(log(nginx), "")
  end

  defp log(nginx), do: Path.join(nginx.dir, "access.log")

  # nginx logs a request after it has sent the answer, so a client can see the answer before
  # the log line. One nginx process serves one request at a time and logs it before it takes
  # the next: once a request of our own is in the log, so is every request answered before it.
  defp settle(nginx) do
    mark = @settle <> Integer.to_string(System.unique_integer([:positive]))
    {:ok, socket} = :gen_tcp.connect({127, 0, 0, 1}, nginx.http_port, [:binary, active: false])
    :ok = :gen_tcp.send(socket, "GET #{mark} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
    drain(socket)
    wait_for_line(log(nginx), mark, 200)
  end

  defp drain(socket) do
    case :gen_tcp.recv(socket, 0, 5_000) do
      {:ok, _data} -> drain(socket)
      {:error, _closed} -> :gen_tcp.close(socket)
    end
  end

  defp wait_for_line(path, mark, tries) do
    cond do
      File.read!(path) =~ mark -> :ok
      tries == 0 -> raise "nginx did not log #{mark}"
      true -> Process.sleep(10) && wait_for_line(path, mark, tries - 1)
    end
  end

  defp config(dir, root, http_port, tls) do
    temp =
      for kind <- ~w(client_body proxy fastcgi uwsgi scgi),
          do: "#{kind}_temp_path #{dir}/#{kind};\n"

    """
    daemon off;
    master_process off;
    pid #{dir}/nginx.pid;
    error_log #{dir}/error.log warn;
    events { worker_connections 512; }
    http {
      #{temp}
      default_type application/octet-stream;
      log_format counting '$request_method\t$request_uri\t$status\t$body_bytes_sent\t$http_range';
      access_log #{dir}/access.log counting;
      server {
        listen 127.0.0.1:#{http_port};
        #{locations(root)}
      }
      #{if tls, do: tls_server(root, tls), else: ""}
    }
    """
  end

  defp tls_server(root, tls) do
    """
    server {
      listen 127.0.0.1:#{tls.port} ssl;
      ssl_certificate #{tls.cert};
      ssl_certificate_key #{tls.key};
      #{locations(root)}
    }
    """
  end

  defp locations(root) do
    """
    root #{root};
    location /norange/ { alias #{root}/; max_ranges 0; }
    location /moved/ { rewrite ^/moved/(.*)$ /$1 permanent; }
    location /tolocalhost/ { rewrite ^/tolocalhost/(.*)$ $scheme://localhost:$server_port/$1 permanent; }
    location /private/ { return 403; }
    location /token/ {
      alias #{root}/;
      if ($http_authorization != "Bearer #{@token}") { return 401; }
    }
    location /encoded/ { alias #{root}/; add_header Content-Encoding gzip; }
    """
  end

  # The certificates live in a folder of their own that is removed only when the VM exits: the
  # ssl application keeps the CA files it was given and re-reads them on a timer, and its
  # manager process crashes (taking TLS connections with it) on one that has gone.
  defp ca_dir! do
    parent = Path.join(System.tmp_dir!(), "ex_zarr_test_ca_" <> System.pid())
    dir = Path.join(parent, Integer.to_string(System.unique_integer([:positive])))
    File.mkdir_p!(dir)
    System.at_exit(fn _status -> File.rm_rf(parent) end)
    dir
  end

  # A CA and a server certificate signed by it for 127.0.0.1 and localhost (EC P-256 keys,
  # valid for two days), made with openssl.
  defp test_ca!(dir) do
    ca = Path.join(dir, "ca.pem")
    ca_key = Path.join(dir, "ca.key")
    cert = Path.join(dir, "server.pem")
    key = Path.join(dir, "server.key")
    csr = Path.join(dir, "server.csr")
    ext = Path.join(dir, "server.ext")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    openssl!(
      ["req", "-x509"] ++
        ec ++
        ["-keyout", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=ExZarr test CA"] ++
        ["-addext", "basicConstraints=critical,CA:TRUE"] ++
        ["-addext", "keyUsage=critical,keyCertSign,cRLSign"]
    )

    openssl!(["req"] ++ ec ++ ["-keyout", key, "-out", csr, "-subj", "/CN=localhost"])

    File.write!(ext, """
    basicConstraints=CA:FALSE
    keyUsage=critical,digitalSignature
    extendedKeyUsage=serverAuth
    subjectAltName=IP:127.0.0.1,DNS:localhost
    """)

    openssl!(
      ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial"] ++
        ["-out", cert, "-days", "2", "-extfile", ext]
    )

    %{ca: ca, cert: cert, key: key}
  end

  defp openssl!(args) do
    {out, status} = System.cmd("openssl", args, stderr_to_stdout: true)
    if status != 0, do: raise("openssl #{hd(args)} failed: #{out}")
  end
end
