defmodule ExZarr.Storage.GridFS do
  @moduledoc """
  A store in MongoDB GridFS (`storage: :mongo_gridfs`): one GridFS file per Zarr key, in the
  bucket `collection` (the collections `<collection>.files` and `<collection>.chunks`) of
  `database`, laid out as every MongoDB driver lays it out, so pymongo's `gridfs` and other
  drivers read and write the same files. Talks to the server with ExZarr's own client
  (`ExZarr.Storage.Mongo.Connection`, pooled by `ExZarr.Storage.Mongo.Pool`). Tested on
  FerretDB.

      {:ok, array} =
        ExZarr.create(storage: :mongo_gridfs, url: "mongodb://127.0.0.1:27017",
                      database: "db", collection: "arrays", path: "a.zarr",
                      shape: {100}, chunks: {10}, dtype: :int32)

  Options:
    * `:url` - `"mongodb://[user:password@]host[:port][/authdb][?authSource=db]"` (default
      `"mongodb://127.0.0.1:27017"`): one server; the URL's database is where the user logs
      in (default `admin`). `authMechanism` may only be `SCRAM-SHA-256`. TLS, `mongodb+srv`
      and several hosts are not supported.
    * `:database` - the database of the bucket (default the URL's database; one is needed).
    * `:collection` - the GridFS bucket name (default `"fs"`, as the drivers name it).
    * `:path` - a prefix inside the bucket: key `"c/0"` is the file `"<path>/c/0"`
      (default `""`: the key itself).
    * `:username`, `:password`, `:auth_source` - SCRAM-SHA-256 login (they win over the
      URL's). The password is kept in a closure that `inspect` and errors leave out.
    * `:chunk_size` - bytes per GridFS chunk of new files (default 255 KiB as the drivers;
      at most 15 MiB so a chunk fits in one document).
    * `:pool_size` - connections to the server at most (default 8; also the requests a read
      of many chunks keeps in flight).
    * `:timeout` (ms, one command, and the wait for a pooled connection; default 30,000),
      `:connect_timeout` (5,000), `:max_retries` (3), `:base_backoff`, `:max_backoff` (ms,
      100 and 2,000): operations that fail on the connection or with a transient server
      error are run again after a random wait.

  Guarantees:
    * A put writes every chunk of a new file, then its files document under a name no reader
      takes, commits it (below), then gives it its filename and removes the older versions
      of that filename. Readers take the last committed version, or a newer one written by
      another driver (`uploadDate`, then `_id`, as pymongo's `get_last_version`), so a read
      returns the old or the new value, never a mix. A put that fails may have written the
      new value or not; an interrupted one can leave chunks of an unfinished file, which
      nothing reads.
    * Byte ranges fetch only the GridFS chunks that cover them; `get_ranges/3` reads the
      chunks of many ranges in one query. A version removed while it is read is noticed (its
      chunks go missing) and the read starts again on the newest one, up to 10 times (a value
      replaced faster than it can be read gives `{:error, {:replaced_while_read, name}}`); a
      version that lacks chunks for good gives `{:error, {:corrupt_gridfs_file, name}}`.
    * Generations are the file's `_id`: every write makes a new one.
    * `list` finds files by filename prefix. Indexes on `filename`/`uploadDate`, the unique
      `files_id`/`n` and the commits' `f`/`s` are created once per node and bucket, on the
      first write.

  Conditional writes (`put_if/4`, `delete_if/3`): every write and delete of a filename is
  numbered: it inserts the document `<filename>\\<n>` into `<collection>.exzarr_commits`
  naming its version (none for a delete), `n` one more than the last commit's. The insert is
  the one step (`_id` is unique: of the writers that read the same last commit, one lands,
  the others get a duplicate key and are refused, or, unconditional, try the next number),
  so the condition (the version read, or `:absent`) is checked against the last commit
  before it and holds for every writer of the bucket, anywhere. Not a `findAndModify` on a
  head document: FerretDB 1.24 (the test server) runs `findAndModify` and `update` as a query
  and then a replace by `_id` without checking the filter again (no transactions either), so
  they are no compare-and-swap there. Commits date their version after every version the
  filename has, so that readers and other drivers take it; they stay in the collection (a
  small document per write), as a stale writer's number must keep being taken. A version
  another driver writes later is read, and the next ExZarr write commits over it.

  Servers: MongoDB 3.6 and later (OP_MSG). FerretDB 1.x (the test server) works, but its
  SQLite backend uses no index for these queries: each read scans the bucket's chunks, so
  a read there costs about the bucket's size.
  """
  @behaviour ExZarr.Storage

  alias ExZarr.Storage
  alias ExZarr.Storage.{Backoff, HTTP, Keys, Range}
  alias ExZarr.Storage.Mongo.{BSON, Connection, Pool}

  @kib 1024
  @default_url "mongodb://127.0.0.1:27017"
  # data per insert command, well under the 16 MiB a command document may have
  @batch_bytes 8 * 1024 * 1024
  # reads that find a version's chunks gone (it was replaced) start again this many times
  @read_restarts 10
  # server errors worth another try (shutdown, network, not primary, interrupted)
  @transient_codes [6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436]

  @derive {Inspect, except: [:credentials, :pool_key]}
  @enforce_keys [:host, :port, :database, :bucket, :prefix, :pool_key]
  defstruct [
    :host,
    :port,
    :database,
    :bucket,
    :prefix,
    :pool_key,
    :credentials,
    chunk_size: 255 * @kib,
    pool_size: 8,
    timeout: 30_000,
    connect_timeout: 5_000,
    max_retries: 3,
    base_backoff: 100,
    max_backoff: 2_000
  ]

  @type t :: %__MODULE__{
          host: String.t(),
          port: :inet.port_number(),
          database: String.t(),
          bucket: String.t(),
          prefix: String.t(),
          pool_key: term(),
          credentials: Connection.credentials(),
          chunk_size: pos_integer(),
          pool_size: pos_integer(),
          timeout: pos_integer(),
          connect_timeout: pos_integer(),
          max_retries: non_neg_integer(),
          base_backoff: non_neg_integer(),
          max_backoff: non_neg_integer()
        }

  # {option, default, smallest allowed}
  @tuning [
    {:chunk_size, 255 * @kib, 1},
    {:pool_size, 8, 1},
    {:timeout, 30_000, 1},
    {:connect_timeout, 5_000, 1},
    {:max_retries, 3, 0},
    {:base_backoff, 100, 0},
    {:max_backoff, 2_000, 0}
  ]
  @max_chunk_size 15 * 1024 * @kib

  @doc "The options `init/1` takes."
  @spec options() :: [atom()]
  @impl true
  def options,
    do:
      [:url, :database, :collection, :path, :username, :password, :auth_source] ++
        Enum.map(@tuning, &elem(&1, 0))

  @impl true
  def init(opts) do
    with {:ok, url} <- parse_url(Keyword.get(opts, :url, @default_url)),
         {:ok, database} <- database(Keyword.get(opts, :database, url.database)),
         {:ok, bucket} <- bucket(Keyword.get(opts, :collection, "fs")),
         {:ok, prefix} <- prefix(Keyword.get(opts, :path, "")),
         {:ok, credentials} <- credentials(opts, url),
         {:ok, tuning} <- HTTP.integer_options(opts, @tuning),
         :ok <- check_chunk_size(tuning[:chunk_size]),
         :ok <- Pool.start() do
      login = with {user, password, source} <- credentials, do: {user, source, password.()}

      fields = [
        host: url.host,
        port: url.port,
        database: database,
        bucket: bucket,
        prefix: prefix,
        credentials: credentials,
        pool_key:
          {url.host, url.port, tuning[:pool_size],
           :crypto.hash(:sha256, :erlang.term_to_binary(login))}
      ]

      {:ok, struct!(__MODULE__, fields ++ tuning)}
    end
  end

  ## Options

  defp parse_url(url) when is_binary(url) do
    case URI.parse(url) do
      %URI{scheme: "mongodb", host: host} = uri when is_binary(host) and host != "" ->
        with :ok <- single_host(uri),
             {:ok, query} <- url_query(uri.query),
             {:ok, username, password} <- userinfo(uri.userinfo) do
          {:ok,
           %{
             host: host,
             port: uri.port || 27017,
             database: url_database(uri.path),
             auth_source: query["authSource"],
             username: username,
             password: password
           }}
        end

      %URI{scheme: "mongodb+srv"} ->
        {:error, {:invalid_option, :url, "mongodb+srv URLs are not supported"}}

      _ ->
        {:error, {:invalid_option, :url, "not a mongodb:// URL"}}
    end
  end

  defp parse_url(_url), do: {:error, {:invalid_option, :url, "not a mongodb:// URL"}}

  defp single_host(%URI{host: host, authority: authority}) do
    if String.contains?(host, ",") or String.contains?(authority || "", ","),
      do: {:error, {:invalid_option, :url, "only one host is supported"}},
      else: :ok
  end

  defp url_query(nil), do: {:ok, %{}}

  defp url_query(query) do
    Enum.reduce_while(URI.decode_query(query), {:ok, %{}}, fn
      {"authSource", source}, {:ok, acc} ->
        {:cont, {:ok, Map.put(acc, "authSource", source)}}

      {"authMechanism", "SCRAM-SHA-256"}, acc ->
        {:cont, acc}

      # the value is left out: some (tlsCertificateKeyFilePassword) are secrets
      {name, _value}, _acc ->
        {:halt, {:error, {:invalid_option, :url, "unsupported URL option #{name}"}}}
    end)
  end

  # The password never goes into an error.
  defp userinfo(nil), do: {:ok, nil, nil}

  defp userinfo(info) do
    case String.split(info, ":", parts: 2) do
      [user, password] -> {:ok, URI.decode(user), URI.decode(password)}
      [_user] -> {:error, {:invalid_option, :url, "a user without a password"}}
    end
  end

  defp url_database(path) when path in [nil, "", "/"], do: nil
  defp url_database("/" <> database), do: URI.decode(database)

  defp database(nil), do: {:error, {:invalid_option, :database, nil}}

  defp database(name) when is_binary(name) and name != "" and byte_size(name) < 64 do
    if String.valid?(name) and
         not String.contains?(name, ["/", "\\", ".", " ", "\"", "$", <<0>>]),
       do: {:ok, name},
       else: {:error, {:invalid_option, :database, name}}
  end

  defp database(name), do: {:error, {:invalid_option, :database, name}}

  defp bucket(name) when is_binary(name) and name != "" do
    if String.valid?(name) and not String.contains?(name, ["$", <<0>>]) and
         not String.starts_with?(name, "system."),
       do: {:ok, name},
       else: {:error, {:invalid_option, :collection, name}}
  end

  defp bucket(name), do: {:error, {:invalid_option, :collection, name}}

  defp prefix(path) when is_binary(path) do
    case String.trim(path, "/") do
      "" ->
        {:ok, ""}

      trimmed ->
        case Storage.validate_key(trimmed) do
          :ok -> {:ok, trimmed <> "/"}
          {:error, _} -> {:error, {:invalid_option, :path, path}}
        end
    end
  end

  defp prefix(path), do: {:error, {:invalid_option, :path, path}}

  defp credentials(opts, url) do
    username = Keyword.get(opts, :username, url.username)
    password = Keyword.get(opts, :password, url.password)
    source = Keyword.get(opts, :auth_source) || url.auth_source || url.database || "admin"

    cond do
      is_nil(username) and is_nil(password) -> {:ok, nil}
      not (is_binary(username) and String.valid?(username)) -> invalid(:username)
      not (is_binary(password) and String.valid?(password)) -> invalid(:password)
      not match?({:ok, _}, database(source)) -> {:error, {:invalid_option, :auth_source, source}}
      true -> {:ok, {username, fn -> password end, source}}
    end
  end

  # The value of a credential is never echoed.
  defp invalid(option), do: {:error, {:invalid_option, option, :not_a_utf8_string}}

  defp check_chunk_size(size) when size <= @max_chunk_size, do: :ok
  defp check_chunk_size(size), do: {:error, {:invalid_option, :chunk_size, size}}

  ## Commands

  defp files(gfs), do: gfs.bucket <> ".files"
  defp chunks(gfs), do: gfs.bucket <> ".chunks"

  # `fun` with a pooled connection.
  defp with_conn(gfs, fun) do
    open = fn ->
      Connection.open(gfs.host, gfs.port,
        connect_timeout: gfs.connect_timeout,
        timeout: gfs.timeout,
        credentials: gfs.credentials
      )
    end

    Pool.run(gfs.pool_key, gfs.pool_size, gfs.timeout, open, fun)
  end

  defp command(conn, gfs, document),
    do: Connection.command(conn, gfs.database, document, gfs.timeout)

  # Runs `fun` again after a connection error or a transient server error.
  defp with_retries(gfs, fun, attempt \\ 0) do
    case fun.() do
      {:error, reason} = error ->
        if attempt < gfs.max_retries and transient?(reason) do
          Backoff.sleep(attempt, gfs.base_backoff, gfs.max_backoff)
          with_retries(gfs, fun, attempt + 1)
        else
          error
        end

      other ->
        other
    end
  end

  defp transient?({:mongo_connection, :pool_timeout}), do: false
  defp transient?({:mongo_connection, _}), do: true
  defp transient?({:mongo_error, code, _}), do: code in @transient_codes
  defp transient?(_reason), do: false

  # Every document a query matches, through its cursor's batches.
  defp find(conn, gfs, collection, filter, extra) do
    with {:ok, reply} <- command(conn, gfs, [{"find", collection}, {"filter", filter} | extra]),
         do: batches(conn, gfs, collection, reply, "firstBatch", [])
  end

  defp batches(conn, gfs, collection, %{"cursor" => %{"id" => id} = cursor}, field, acc)
       when is_integer(id) do
    docs = for %{} = doc <- List.wrap(cursor[field]), do: doc
    acc = [docs | acc]

    cond do
      id == 0 ->
        {:ok, acc |> Enum.reverse() |> Enum.concat()}

      # an open cursor that gives nothing (a broken or hostile server) would never end
      docs == [] and field == "nextBatch" ->
        {:error, {:mongo_connection, {:protocol, :empty_batch}}}

      true ->
        more = [{"getMore", {:int64, id}}, {"collection", collection}]

        with {:ok, reply} <- command(conn, gfs, more),
             do: batches(conn, gfs, collection, reply, "nextBatch", acc)
    end
  end

  defp batches(_conn, _gfs, _collection, _reply, _field, _acc),
    do: {:error, {:mongo_connection, {:protocol, :no_cursor}}}

  ## Reads

  @impl true
  def get(%__MODULE__{} = gfs, key, range) do
    with {:ok, [bytes], _generation} <- read(gfs, key, [range], nil), do: {:ok, bytes}
  end

  @impl true
  def get_ranges(%__MODULE__{} = gfs, key, ranges) do
    with {:ok, parts, _generation} <- read(gfs, key, ranges, nil), do: {:ok, parts}
  end

  @doc "Ranges and the `_id` of the file version they were read from (see the moduledoc)."
  @impl true
  def get_ranges_with_generation(%__MODULE__{} = gfs, key, ranges, expected),
    do: read(gfs, key, ranges, expected)

  @doc "The server, the database, the bucket and the filename."
  @impl true
  def identity(%__MODULE__{} = gfs, key),
    do: {__MODULE__, gfs.host, gfs.port, gfs.database, gfs.bucket, gfs.prefix <> key}

  defp read(gfs, key, ranges, expected),
    do: read_newest(gfs, gfs.prefix <> key, ranges, expected, nil, @read_restarts)

  # A version whose chunks go missing while it is read was replaced and removed: the read
  # starts again on the newest one. The same version found torn twice is missing chunks for
  # good.
  defp read_newest(gfs, filename, ranges, expected, torn, restarts) do
    result =
      with_retries(gfs, fn ->
        with_conn(gfs, fn conn ->
          with {:ok, file} <- current(conn, gfs, filename),
               :ok <- expected(file, expected) do
            case read_parts(conn, gfs, file, ranges) do
              {:ok, parts} -> {:ok, parts, file.id}
              {:error, :torn} -> {:error, {:torn, file.id}}
              error -> error
            end
          end
        end)
      end)

    case result do
      {:error, {:torn, ^torn}} ->
        {:error, {:corrupt_gridfs_file, filename}}

      {:error, {:torn, id}} when restarts > 0 ->
        read_newest(gfs, filename, ranges, expected, id, restarts - 1)

      {:error, {:torn, _}} ->
        {:error, {:replaced_while_read, filename}}

      other ->
        other
    end
  end

  defp expected(_file, nil), do: :ok
  defp expected(%{id: id}, id), do: :ok
  defp expected(_file, _expected), do: {:error, :generation_mismatch}

  # The version readers take: the last commit's (see "Conditional writes"), unless another
  # driver wrote a newer one since; for a filename ExZarr never wrote, the newest.
  defp current(conn, gfs, filename) do
    with {:ok, commit} <- last_commit(conn, gfs, filename),
         {:ok, visible} <- visible(conn, gfs, filename) do
      case pick(commit, visible) do
        nil -> {:error, :not_found}
        file -> {:ok, file}
      end
    end
  end

  # The current version: %{id:, length:, chunk_size:, date:}, or nil for none.
  defp pick(nil, visible), do: visible

  defp pick(commit, %{id: id, date: date} = visible)
       when id != commit.v and is_integer(date) and date > commit.d,
       do: visible

  defp pick(%{v: nil}, _visible), do: nil

  defp pick(commit, _visible),
    do: %{id: commit.v, length: commit.length, chunk_size: commit.size, date: commit.d}

  defp visible(conn, gfs, filename) do
    case newest(conn, gfs, filename) do
      {:ok, file} -> {:ok, file}
      {:error, :not_found} -> {:ok, nil}
      error -> error
    end
  end

  defp commits(gfs), do: gfs.bucket <> ".exzarr_commits"

  # The filename's commit of the highest number, or nil.
  defp last_commit(conn, gfs, filename) do
    extra = [{"sort", [{"s", -1}]}, {"limit", 1}, {"singleBatch", true}]

    case find(conn, gfs, commits(gfs), [{"f", filename}], extra) do
      {:ok, [%{"s" => seq, "d" => d} = doc]} when is_integer(seq) and is_integer(d) ->
        {:ok,
         %{seq: seq, v: doc["v"], d: d, length: doc["length"] || 0, size: doc["chunkSize"] || 1}}

      {:ok, []} ->
        {:ok, nil}

      {:ok, [_]} ->
        {:error, {:corrupt_gridfs_file, filename}}

      error ->
        error
    end
  end

  defp date_of({:datetime, ms}), do: ms
  defp date_of(_other), do: nil

  # The newest complete version of a filename, as pymongo's get_last_version finds it.
  defp newest(conn, gfs, filename) do
    extra = [
      {"sort", [{"uploadDate", -1}, {"_id", -1}]},
      {"projection", [{"_id", 1}, {"length", 1}, {"chunkSize", 1}, {"uploadDate", 1}]},
      {"limit", 1},
      {"singleBatch", true}
    ]

    case find(conn, gfs, files(gfs), [{"filename", filename}], extra) do
      {:ok, [%{"_id" => id, "length" => length} = doc | _]}
      when is_integer(length) and length >= 0 ->
        date = date_of(doc["uploadDate"])

        case doc["chunkSize"] do
          size when is_integer(size) and size > 0 ->
            {:ok, %{id: id, length: length, chunk_size: size, date: date}}

          _ when length == 0 ->
            {:ok, %{id: id, length: 0, chunk_size: 1, date: date}}

          _ ->
            {:error, {:corrupt_gridfs_file, filename}}
        end

      {:ok, []} ->
        {:error, :not_found}

      {:ok, _} ->
        {:error, {:corrupt_gridfs_file, filename}}

      error ->
        error
    end
  end

  defp read_parts(conn, gfs, file, ranges) do
    spans = Enum.map(ranges, &Range.resolve(&1, file.length))

    needed =
      spans
      |> Enum.flat_map(fn
        {_offset, 0} ->
          []

        {offset, length} ->
          Enum.to_list(div(offset, file.chunk_size)..div(offset + length - 1, file.chunk_size))
      end)
      |> Enum.uniq()
      |> Enum.sort()

    with {:ok, data} <- fetch_chunks(conn, gfs, file, needed),
         do: {:ok, Enum.map(spans, &assemble(&1, data, file.chunk_size))}
  end

  defp fetch_chunks(_conn, _gfs, _file, []), do: {:ok, %{}}

  defp fetch_chunks(conn, gfs, file, needed) do
    {first, last} = {hd(needed), List.last(needed)}

    n =
      if last - first + 1 == length(needed),
        do: [{"$gte", first}, {"$lte", last}],
        else: [{"$in", needed}]

    extra = [{"sort", [{"n", 1}]}, {"projection", [{"n", 1}, {"data", 1}, {"_id", 0}]}]

    with {:ok, docs} <- find(conn, gfs, chunks(gfs), [{"files_id", file.id}, {"n", n}], extra) do
      data = for %{"n" => n, "data" => {:binary, _, bytes}} <- docs, into: %{}, do: {n, bytes}
      whole? = Enum.all?(needed, &(byte_size(Map.get(data, &1, "")) == chunk_length(file, &1)))
      if whole?, do: {:ok, data}, else: {:error, :torn}
    end
  end

  defp chunk_length(file, n), do: min(file.chunk_size, file.length - n * file.chunk_size)

  defp assemble({_offset, 0}, _data, _size), do: ""

  defp assemble({offset, length}, data, size) do
    first = div(offset, size)
    last = div(offset + length - 1, size)
    skip = offset - first * size

    if first == last do
      unpin(binary_part(Map.fetch!(data, first), skip, length))
    else
      head = data |> Map.fetch!(first) |> binary_part(skip, size - skip)
      middle = for n <- (first + 1)..(last - 1)//1, do: Map.fetch!(data, n)
      tail = data |> Map.fetch!(last) |> binary_part(0, offset + length - last * size)
      IO.iodata_to_binary([head, middle, tail])
    end
  end

  # A small part of a large reply is copied, so that keeping it does not keep the reply.
  defp unpin(part) do
    if :binary.referenced_byte_size(part) > 2 * byte_size(part) + 1024,
      do: :binary.copy(part),
      else: part
  end

  ## Writes

  @impl true
  def put(%__MODULE__{} = gfs, key, value) do
    with {:ok, _generation} <- put_if(gfs, key, value, :any), do: :ok
  end

  @doc """
  Stores a value on a condition (see "Conditional writes" in the moduledoc): the new version
  is staged under a name no reader takes, committed with the insert of the filename's next
  commit number (one step: the `_id` is unique), then published under its filename.
  """
  @impl true
  def put_if(%__MODULE__{} = gfs, key, value, condition) do
    filename = gfs.prefix <> key

    with {:ok, value} <- Keys.to_binary(value),
         :ok <- ensure_indexes(gfs),
         {:ok, staged} <- with_retries(gfs, fn -> stage(gfs, filename, value) end) do
      case commit(gfs, filename, condition, staged) do
        {:ok, _} = ok ->
          ok

        error ->
          with_retries(gfs, fn -> with_conn(gfs, &remove(&1, gfs, [staged.v])) end)
          error
      end
    end
  end

  @doc "Deletes on a generation: a commit that names no version, then the versions go."
  @impl true
  def delete_if(%__MODULE__{} = gfs, key, {:object_id, _} = generation),
    do: gfs |> commit(gfs.prefix <> key, generation, nil) |> deleted()

  def delete_if(%__MODULE__{}, _key, _generation), do: {:error, :generation_mismatch}

  @impl true
  def delete(%__MODULE__{} = gfs, key),
    do: gfs |> commit(gfs.prefix <> key, :any, nil) |> deleted()

  defp deleted({:ok, _}), do: :ok
  defp deleted(error), do: error

  # The chunks, then a files document under a name no reader takes (`pending/1`):
  # -> {:ok, %{v: id, length:, size:}}.
  defp stage(gfs, filename, value) do
    {:object_id, _} = id = BSON.object_id()

    with_conn(gfs, fn conn ->
      case insert_chunks(conn, gfs, id, value, 0) do
        :ok ->
          document = file_document(id, pending(filename), value, 0, gfs)

          with {:ok, _} <- command(conn, gfs, insert(files(gfs), [document])),
               do: {:ok, %{v: id, length: byte_size(value), size: gfs.chunk_size}}

        # Refused by the server: the chunks written so far go (on a broken connection they
        # cannot, and stay unread).
        {:error, {:mongo_error, _, _}} = error ->
          command(conn, gfs, delete_command(chunks(gfs), [{"files_id", id}]))
          error

        error ->
          error
      end
    end)
  end

  # A filename that is no key (keys have no backslash): listings and readers skip it.
  defp pending(filename), do: "\\exzarr-pending\\" <> filename

  @commit_rounds 50

  # Commits `staged` (or, with nil, the value's absence) if the current version is what
  # `condition` says; {:ok, id or nil}, {:error, :generation_mismatch}. Writers that race
  # for the same commit number: one insert lands; an unconditional write tries the next one.
  defp commit(gfs, filename, condition, staged, round \\ 0) do
    result =
      with_retries(gfs, fn ->
        with_conn(gfs, fn conn ->
          with {:ok, last} <- last_commit(conn, gfs, filename),
               {:ok, visible} <- visible(conn, gfs, filename) do
            now = pick(last, visible)
            id = now && now.id

            cond do
              # this writer's commit, made by a request whose answer was lost
              staged != nil and last != nil and last.v == staged.v ->
                publish(conn, gfs, filename, last.v, last.d, nil)

              condition not in [:any, id] and not (condition == :absent and id == nil) ->
                {:error, :generation_mismatch}

              staged == nil and id == nil ->
                {:ok, nil}

              true ->
                insert_commit(conn, gfs, filename, last, visible, staged)
            end
          end
        end)
      end)

    case result do
      :taken when condition == :any and round < @commit_rounds ->
        Backoff.sleep(round, 1, 50)
        commit(gfs, filename, condition, staged, round + 1)

      :taken when condition == :any ->
        {:error, {:write_conflict, filename, @commit_rounds}}

      :taken ->
        {:error, :generation_mismatch}

      other ->
        other
    end
  end

  # Commit number n + 1 naming the staged version (nil: none), dated after everything the
  # filename holds, so that readers (newest first, as the drivers) take it once published.
  defp insert_commit(conn, gfs, filename, last, visible, staged) do
    seq = if last, do: last.seq + 1, else: 1
    after_ms = max((last && last.d) || 0, (visible && visible.date) || 0)
    date = max(System.os_time(:millisecond), after_ms + 1)
    {v, length, size} = if staged, do: {staged.v, staged.length, staged.size}, else: {nil, 0, 1}

    document = [
      {"_id", filename <> "\\" <> String.pad_leading(Integer.to_string(seq), 16, "0")},
      {"f", filename},
      {"s", seq},
      {"v", v},
      {"length", length},
      {"chunkSize", size},
      {"d", date}
    ]

    case command(conn, gfs, insert(commits(gfs), [document])) do
      {:ok, _} -> publish(conn, gfs, filename, v, date, last)
      # taken by another writer, or by this one in a request whose answer was lost
      {:error, {:mongo_error, 11000, _}} -> own_commit(conn, gfs, filename, v, date, last)
      error -> error
    end
  end

  defp own_commit(conn, gfs, filename, v, date, last) do
    case last_commit(conn, gfs, filename) do
      {:ok, %{v: ^v, d: ^date}} when v != nil -> publish(conn, gfs, filename, v, date, last)
      {:ok, _other} -> :taken
      error -> error
    end
  end

  # Gives a committed version its filename and date, then removes what it replaced: the
  # versions dated before it, and the previous commit's (which may never have been published).
  defp publish(conn, gfs, filename, v, date, last) do
    published =
      if v == nil do
        {:ok, nil}
      else
        set = [{"filename", filename}, {"uploadDate", {:datetime, date}}]

        update = [
          {"update", files(gfs)},
          {"updates", [[{"q", [{"_id", v}]}, {"u", [{"$set", set}]}]]}
        ]

        command(conn, gfs, update)
      end

    with {:ok, _} <- published do
      # (the value is committed: what stays behind is removed by a later write)
      remove_older(conn, gfs, filename, {date, v})
      if last && last.v not in [nil, v], do: remove(conn, gfs, [last.v])
      {:ok, v}
    end
  end

  defp file_document(id, filename, value, date, gfs) do
    [
      {"_id", id},
      {"length", byte_size(value)},
      {"chunkSize", gfs.chunk_size},
      {"uploadDate", {:datetime, date}},
      {"filename", filename}
    ]
  end

  defp insert(collection, documents),
    do: [{"insert", collection}, {"documents", documents}, {"ordered", true}]

  defp insert_chunks(conn, gfs, id, value, n) do
    offset = n * gfs.chunk_size

    if offset >= byte_size(value) do
      :ok
    else
      count = max(1, div(@batch_bytes, gfs.chunk_size))

      docs =
        for i <- n..(n + count - 1), i * gfs.chunk_size < byte_size(value) do
          start = i * gfs.chunk_size
          part = binary_part(value, start, min(gfs.chunk_size, byte_size(value) - start))
          [{"_id", BSON.object_id()}, {"files_id", id}, {"n", i}, {"data", {:binary, 0, part}}]
        end

      with {:ok, _} <- command(conn, gfs, insert(chunks(gfs), docs)),
           do: insert_chunks(conn, gfs, id, value, n + count)
    end
  end

  # Removes the versions of `filename` older than `version` (not newer ones: another writer's
  # later put must stay), files documents first so that no reader starts on them.
  defp remove_older(conn, gfs, filename, {date, id}) do
    extra = [{"projection", [{"_id", 1}, {"uploadDate", 1}]}]

    with {:ok, docs} <- find(conn, gfs, files(gfs), [{"filename", filename}], extra) do
      older = for %{"_id" => other} = doc <- docs, older?(doc, date, id), do: other
      remove(conn, gfs, older)
    end
  end

  defp older?(%{"_id" => other} = doc, date, id) do
    other_date =
      case doc["uploadDate"] do
        {:datetime, ms} -> ms
        _ -> nil
      end

    cond do
      other == id -> false
      other_date == nil -> true
      other_date != date -> other_date < date
      true -> match?({{:object_id, a}, {:object_id, b}} when a < b, {other, id})
    end
  end

  defp remove(_conn, _gfs, []), do: :ok

  defp remove(conn, gfs, ids) do
    with {:ok, _} <- command(conn, gfs, delete_command(files(gfs), [{"_id", [{"$in", ids}]}])),
         {:ok, _} <-
           command(conn, gfs, delete_command(chunks(gfs), [{"files_id", [{"$in", ids}]}])),
         do: :ok
  end

  defp delete_command(collection, filter),
    do: [{"delete", collection}, {"deletes", [[{"q", filter}, {"limit", 0}]]}]

  # The indexes drivers create: files by filename and date, chunks unique by file and n.
  defp ensure_indexes(gfs) do
    table = index_table()
    mark = {gfs.host, gfs.port, gfs.database, gfs.bucket}

    if :ets.member(table, mark) or not :ets.insert_new(table, {mark}) do
      :ok
    else
      result =
        with_retries(gfs, fn ->
          with_conn(gfs, fn conn ->
            files_index = [{"filename", 1}, {"uploadDate", 1}]
            chunks_index = [{"files_id", 1}, {"n", 1}]

            with :ok <- create_index(conn, gfs, files(gfs), files_index, []),
                 :ok <- create_index(conn, gfs, chunks(gfs), chunks_index, [{"unique", true}]),
                 do: create_index(conn, gfs, commits(gfs), [{"f", 1}, {"s", -1}], [])
          end)
        end)

      if result != :ok, do: :ets.delete(table, mark)
      result
    end
  end

  # A public table of the indexes made, owned by ExZarr's table owner (created on first use).
  defp index_table do
    case :ets.whereis(:ex_zarr_gridfs_indexes) do
      :undefined ->
        {:ok, table} = Storage.TableOwner.create(name: :ex_zarr_gridfs_indexes)
        table

      _ ->
        :ex_zarr_gridfs_indexes
    end
  end

  # An index of that name that exists with other options is left as it is (codes 85, 86).
  defp create_index(conn, gfs, collection, keys, options) do
    name = Enum.map_join(keys, "_", fn {field, order} -> "#{field}_#{order}" end)
    index = [{"key", keys}, {"name", name} | options]

    case command(conn, gfs, [{"createIndexes", collection}, {"indexes", [index]}]) do
      {:ok, _} -> :ok
      {:error, {:mongo_error, code, _}} when code in [85, 86] -> :ok
      error -> error
    end
  end

  ## Listings

  @impl true
  def list(%__MODULE__{} = gfs, prefix) do
    dir = gfs.prefix <> Keys.dir_prefix(prefix)
    filter = if dir == "", do: %{}, else: [{"filename", [{"$regex", "^" <> escape_regex(dir)}]}]
    extra = [{"projection", [{"filename", 1}, {"_id", 0}]}]

    with {:ok, docs} <-
           with_retries(gfs, fn ->
             with_conn(gfs, &find(&1, gfs, files(gfs), filter, extra))
           end) do
      skip = byte_size(gfs.prefix)

      keys =
        for %{"filename" => name} when is_binary(name) <- docs,
            String.starts_with?(name, gfs.prefix),
            key = binary_part(name, skip, byte_size(name) - skip),
            Storage.validate_key(key) == :ok,
            uniq: true,
            do: key

      {:ok, Keys.under(keys, prefix)}
    end
  end

  defp escape_regex(text), do: Regex.replace(~r/[\\^$.|?*+()\[\]{}]/, text, "\\\\\\0")

  @impl true
  def supports_ranges?(_gfs), do: true

  # Each read is a round trip to the server: many ranges at once pay off.
  @impl true
  def multi_range?(_gfs), do: false

  @impl true
  def io_concurrency(%__MODULE__{pool_size: size}), do: size
end
