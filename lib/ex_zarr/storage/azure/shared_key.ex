defmodule ExZarr.Storage.Azure.SharedKey do
  @moduledoc false
  # Azure Storage Shared Key authorization: an HMAC-SHA256, keyed with the account key, over
  # the request's method, standard headers, `x-ms-*` headers and canonicalized resource
  # (`/account/path` and the sorted query parameters), sent as
  # `Authorization: SharedKey <account>:<signature>`.

  @type request :: %{
          method: String.t(),
          account: String.t(),
          path: String.t(),
          query: [{String.t(), String.t()}],
          headers: [{String.t(), String.t()}],
          content_length: non_neg_integer(),
          content_type: String.t()
        }

  @doc """
  The `Authorization` header value for a request. `path` is the URL path as sent (encoded),
  `query` the decoded parameters, `headers` every header sent besides Content-Length and
  Content-Type, which are given on their own. `key` is the decoded account key.
  """
  @spec authorization(request(), binary()) :: String.t()
  def authorization(request, key) do
    signature = :crypto.mac(:hmac, :sha256, key, string_to_sign(request))
    "SharedKey #{request.account}:#{Base.encode64(signature)}"
  end

  @doc """
  The string that is signed.

      iex> ExZarr.Storage.Azure.SharedKey.string_to_sign(%{
      ...>   method: "GET", account: "acct", path: "/c/b", query: [{"comp", "list"}],
      ...>   headers: [{"x-ms-version", "2021-12-02"}, {"x-ms-date", "d"}],
      ...>   content_length: 0, content_type: ""})
      "GET\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\nx-ms-date:d\\nx-ms-version:2021-12-02\\n/acct/c/b\\ncomp:list"
  """
  @spec string_to_sign(request()) :: String.t()
  def string_to_sign(request) do
    standard =
      for name <-
            ~w(content-encoding content-language content-length content-md5 content-type date
                     if-modified-since if-match if-none-match if-unmodified-since range) do
        case name do
          "content-length" when request.content_length > 0 ->
            Integer.to_string(request.content_length)

          "content-length" ->
            ""

          "content-type" ->
            request.content_type

          _ ->
            header(request.headers, name)
        end
      end

    ms_headers =
      for {name, value} <- request.headers,
          name = String.downcase(name),
          String.starts_with?(name, "x-ms-"),
          do: {name, value |> String.split() |> Enum.join(" ")}

    canonical_headers = for {name, value} <- Enum.sort(ms_headers), do: [name, ":", value, "\n"]

    query =
      request.query
      |> Enum.group_by(fn {name, _} -> String.downcase(name) end, fn {_, value} -> value end)
      |> Enum.sort()
      |> Enum.map(fn {name, values} ->
        ["\n", name, ":", values |> Enum.sort() |> Enum.join(",")]
      end)

    IO.iodata_to_binary([
      request.method,
      "\n",
      Enum.map(standard, &[&1, "\n"]),
      canonical_headers,
      "/",
      request.account,
      request.path,
      query
    ])
  end

  defp header(headers, name) do
    Enum.find_value(headers, "", fn {k, v} -> if String.downcase(k) == name, do: v end)
  end
end
